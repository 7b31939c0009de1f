"""The scheduler's work: the deadline sweep, the jobs it runs, and the operator's status report."""
