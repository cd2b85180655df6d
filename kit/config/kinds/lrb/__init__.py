"""The lrb benchmark kind's data: its folder (manifest, one CSV per language, prompt files) and
which prompt each run is asked with."""
