from portwright.cli import main

main()
