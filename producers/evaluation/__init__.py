"""Evaluation of a repair policy on held-out bugs, and the raw-vs-reshaped experiment.

    from producers.evaluation.eval import evaluate_policy
    report = evaluate_policy(model_dir, read_eval_tasks("validation.jsonl"), k=4, pool=pool)
"""
