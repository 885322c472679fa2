"""``python -m spt_theory.bench``: training throughput against torch's own Transformer layer.

Both models have identical sizes and optimiser (AdamW): token embedding + sinusoidal PE, pre-LN
layers (one unless a size says otherwise) with GELU MLP, final LayerNorm, mean pooling, linear
head.  The reference uses ``torch.nn.TransformerEncoderLayer(norm_first=True, activation="gelu",
dropout=0, batch_first=True)``.  Each step reads its loss back before the backward pass, as the
training loop does.  All models
are timed interleaved over repetitions in one process (so load on the machine hits them alike)
and reported as median and interquartile range; the speedup is the ratio of medians, and the
quartiles of the per-repetition ratios (each from adjacent timings) show its spread.

Besides the toolkit's model (``spt_theory``) two ablations are timed with it, each removing one
of its speed-ups: ``torch_linear`` (``F.linear``, i.e. MKL, instead of the oneDNN linear of
:mod:`spt_theory.core.cpu`) and ``no_table`` (the first block's Q, K, V computed per token instead of
per (token, position) table row).  One more row, in every CPU case, is a bound rather than a
model: ``attention_free`` (attention's output replaced by V, so the row is the step without any
attention kernel, the fastest any attention kernel could make it: :class:`AttentionFreeEncoder`).
The allocator tuning of :func:`spt_theory.core.cpu.tune_allocator` is process-wide, so it applies to
all models, the reference included.

Achieved GFLOP/s counts the matmul FLOPs of one training step (backward = 2x forward,
:func:`train_step_flops`), per layer:

    forward per sequence = 2 n (3 d^2 + d^2 + 2 d d_ff) + 2 * 2 n^2 d     (projections, MLP, QK^T and AV)

at the padded length n the kernels compute, and is compared with the measured peak of a square
float32 matmul on the same machine: the fastest of torch's own (MKL) and oneDNN's over the sizes
512, 1024 and 2048 (each kernel's best reported).

**LRA-shaped case** (``lra_masked`` in the default run; ``--lra`` runs only such cases): lengths
of ListOps trees drawn by the ListOps generator (seeded), one length-sorted bucket cut into
batches (:func:`spt_theory.training.loop.epoch_batches`), each padded to its longest, padded keys
masked (``Encoder(x, valid=mask)``; the reference gets the same mask as ``src_key_padding_mask``)
and both pooled by the mean over the real tokens.  Each repetition times one pass over all the
batches; tokens/s counts real tokens.  ``--device cuda`` times the same code at the ListOps and
Pathfinder shapes of the GPU confirmation (1 layer; ListOps: width 512, 8 heads, FF 2048, batch 32,
lengths 500-2000; Pathfinder: width 128, 8 heads, FF 128, batch 32, 1024 pixels as tokens) under
bf16 autocast, timed with CUDA events after warm-up, against the card's bf16 dense peak
(:data:`BF16_DENSE_PEAK_TFLOPS`).
"""
