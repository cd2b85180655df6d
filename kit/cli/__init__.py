"""The click CLI: thin commands that parse, call one library function, and print."""
