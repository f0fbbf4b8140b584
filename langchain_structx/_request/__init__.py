"""What is sent to a model: the plan for each strategy, envelopes, prompts, per-model routes."""
