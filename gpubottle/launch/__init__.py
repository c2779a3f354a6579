"""Starting the script: the supervisor (CLI process) and the bootstrap that runs in the child."""
