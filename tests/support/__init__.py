"""Test helpers shared by the suites and the benchmarks (no Django import here)."""
