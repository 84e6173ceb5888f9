"""The bot-side library: `MemoryClient` (commands out, results back over NATS) and the cache
node (`memoryctl cache-node`, or embedded in a bot). Runs in the bot's process, never imports
`db` or the worker's services (an import-linter contract in pyproject.toml), so a bot needs
only `pip install memory-worker` without the `local` extra."""

from worker.client.memory_client import MemoryClient, new_create

__all__ = ["MemoryClient", "new_create"]
