"""LightEval suites inside the vllm image: LightEval's tasks, prompts and metrics, with kit's
vLLM engine generating (kit.worker.lighteval.model) and kit's checkpoints recording the result."""
