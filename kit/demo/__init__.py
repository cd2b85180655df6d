"""The embedded demo: what `kit demo` writes and runs when the user has no files of their own."""
