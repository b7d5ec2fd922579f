from tempr.cli import main

main()
