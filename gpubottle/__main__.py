from gpubottle.command import entry

entry()
