from gpubottle.cli import main

main()
