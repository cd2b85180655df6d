"""Evidence and reproduction: compliance check, collect, reproduce a result."""
