from gpubottle.cli import entry

entry()
