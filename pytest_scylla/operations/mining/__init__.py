"""`scylla cases mine`: evaluation cases from a repository's own history."""
