"""The operator CLI, `memoryctl` (worker.cli.memoryctl:main): run, migrate, adopt, workspace and
directory commands, dead letters, stream commands, the demo. Starts the other processes; the
subcommands import what they need when they run."""
