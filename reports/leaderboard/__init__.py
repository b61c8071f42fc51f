"""The benchmark leaderboard: chatbots' scores side by side, every pair compared with a paired interval."""
