"""The LRA task registry: the one place that knows which tasks exist ([docs/add-a-task.md]).

``register_task(name, config, reader, folder, reference=None)`` enters a task: its paper-sized
:class:`~spt_theory.lra.configs.LRAConfig`, the reader of its release files
(``reader(data_dir, split, **options) -> LRASplit | LRAPairSplit``), the folder under
``--data-dir`` that holds them (a format string over the config's fields, e.g.
``pathfinder{resolution}``; a generator's marker is looked for there) and the test accuracy (%)
of the Transformer trained from scratch in the LRA paper (Tay et al.), None where the task has
none (``lra report`` then prints ``-``).  Everything else reads the registry: the command line's
``--task`` choices (:func:`task_names`), the configs (:func:`config_for`, here),
the data (:mod:`spt_theory.lra.data`), ``lra report`` and the ``lra_table`` figure.

The five LRA tasks are registered at the bottom of this module, in the order tables list them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spt_theory.lra.configs import LRAConfig
from spt_theory.lra.readers.common import BYTE_VOCAB, LISTOPS_VOCAB, PIXEL_VOCAB, PIXELS, LRAPairSplit, LRASplit
from spt_theory.lra.readers.image import read_image
from spt_theory.lra.readers.listops import LISTOPS_MAX_LEN, read_listops
from spt_theory.lra.readers.pathfinder import read_pathfinder
from spt_theory.lra.readers.retrieval import RETRIEVAL_MAX_LEN, read_retrieval
from spt_theory.lra.readers.text import TEXT_MAX_LEN, read_text
from spt_theory.util.files import ConfigError

Reader = Callable[..., "LRASplit | LRAPairSplit"]


def token_options(config: LRAConfig) -> dict:
    """The reader's keywords by default: ``max_len`` (the config's ``max_length``) for a token task,
    none for a pixel task."""
    return {"max_len": config.max_length} if config.masking == "token" else {}


def image_folder_options(config: LRAConfig) -> dict:
    """Pathfinder's keywords: which generated or release folder (image side, contour length)."""
    return {"resolution": config.resolution, "contour_length": config.contour_length}


@dataclass(frozen=True)
class LRATaskEntry:
    """One registered task (:func:`register_task`)."""

    name: str
    config: LRAConfig
    reader: Reader
    folder: str
    reference: float | None = None
    title: str = ""
    """The name in running text (``ListOps``); default: the name capitalised."""
    held_out: float | None = None
    """For a release without a validation split: the share of train held out for it (seeded)."""
    options: Callable[[LRAConfig], dict] = token_options
    """The reader's keywords from the run's config (default :func:`token_options`)."""

    def data_folder(self, config: LRAConfig) -> str:
        """The folder under ``--data-dir`` of the data ``config`` reads."""
        return self.folder.format(**{name: getattr(config, name) for name in ("resolution", "contour_length")})


_TASKS: dict[str, LRATaskEntry] = {}


def register_task(name: str, config: LRAConfig, reader: Reader, folder: str, reference: float | None = None, *,
                  title: str | None = None, held_out: float | None = None,
                  options: Callable[[LRAConfig], dict] = token_options) -> LRATaskEntry:
    """Enter the task ``name`` (module doc); ValueError for a name taken or a config of another task."""
    if not name or not name.isidentifier() or name != name.lower():
        raise ValueError(f"LRA task name {name!r}: a lower-case identifier")
    if name in _TASKS:
        raise ValueError(f"LRA task {name!r} is registered already")
    if config.task != name:
        raise ValueError(f"LRA task {name!r}: its config says task={config.task!r}")
    if held_out is not None and not 0.0 < held_out < 1.0:
        raise ValueError(f"LRA task {name!r}: held_out must be in (0, 1), got {held_out!r}")
    entry = LRATaskEntry(name, config, reader, folder, None if reference is None else float(reference),
                         title or name.capitalize(), held_out, options)
    _TASKS[name] = entry
    return entry


def task_names() -> tuple[str, ...]:
    """The registered tasks, in registration order."""
    return tuple(_TASKS)


def lra_task(name: str) -> LRATaskEntry:
    """The registered task ``name``; ConfigError (an InputError) naming the known ones otherwise."""
    try:
        return _TASKS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown LRA task {name!r}; choose one of {', '.join(_TASKS)}") from None


def config_for(task: str) -> LRAConfig:
    """The paper-sized config of ``task`` (as registered); ConfigError for an unknown task."""
    return lra_task(task).config


def reference(name: str) -> float | None:
    """The LRA paper's from-scratch Transformer accuracy (%) of ``name``; None for a task without
    one or not registered."""
    entry = _TASKS.get(name)
    return None if entry is None else entry.reference


def references_text() -> str:
    """'ListOps 36.37, Text 64.27, ...': every task with reference numbers, for table notes."""
    return ", ".join(f"{t.title} {t.reference:.2f}" for t in _TASKS.values() if t.reference is not None)


# ------------------------------------------------------------------------------ the LRA tasks
# Values from Amos et al. ("Never Train from Scratch", ICLR 2024, and their released configs); the
# warm-up lengths are a choice within their stated 2000-5000 steps (longer for the long token
# tasks, whose pretraining learning rates are highest).

register_task("listops", LRAConfig(
    task="listops", n_layers=6, d_model=512, n_heads=8, d_ff=2048, head="linear", pooling="mean",
    mask_ratio=0.10, masking="token", pretrain_loss="ce", lr_finetune=1e-4, lr_pretrain=1e-3,
    pretrain_epochs=100, warmup_steps=5000, batch_size=32, max_length=LISTOPS_MAX_LEN,
    num_classes=10, vocab_size=LISTOPS_VOCAB.size),
    read_listops, "listops-1000", 36.37, title="ListOps")
register_task("text", LRAConfig(
    task="text", n_layers=6, d_model=512, n_heads=8, d_ff=2048, head="mlp", pooling="mean",
    mask_ratio=0.15, masking="token", pretrain_loss="ce", lr_finetune=1e-4, lr_pretrain=5e-4,
    pretrain_epochs=32, warmup_steps=5000, batch_size=32, max_length=TEXT_MAX_LEN,
    num_classes=2, vocab_size=BYTE_VOCAB.size),
    read_text, "aclImdb", 64.27, held_out=0.1)
register_task("retrieval", LRAConfig(
    task="retrieval", n_layers=4, d_model=128, n_heads=4, d_ff=512, head="pair_mlp", pooling="mean",
    mask_ratio=0.15, masking="token", pretrain_loss="ce", lr_finetune=5e-4, lr_pretrain=5e-3,
    pretrain_epochs=32, warmup_steps=5000, batch_size=32, max_length=RETRIEVAL_MAX_LEN,
    num_classes=2, vocab_size=BYTE_VOCAB.size),
    read_retrieval, ".", 57.46)
register_task("image", LRAConfig(
    task="image", n_layers=3, d_model=64, n_heads=4, d_ff=128, head="mlp", pooling="mean",
    mask_ratio=0.50, masking="pixel", pretrain_loss="l1", lr_finetune=1e-3, lr_pretrain=1e-3,
    pretrain_epochs=50, warmup_steps=2000, batch_size=32, max_length=PIXELS,
    num_classes=10, vocab_size=PIXEL_VOCAB.size),
    read_image, "cifar-10-batches-py", 42.44, held_out=0.1)
register_task("pathfinder", LRAConfig(
    task="pathfinder", n_layers=4, d_model=128, n_heads=8, d_ff=128, head="linear", pooling="mean",
    mask_ratio=0.50, masking="pixel", pretrain_loss="ce", lr_finetune=5e-4, lr_pretrain=1e-3,
    pretrain_epochs=50, warmup_steps=2000, batch_size=32, max_length=PIXELS,
    num_classes=2, vocab_size=PIXEL_VOCAB.size),
    read_pathfinder, "pathfinder{resolution}/curv_contour_length_{contour_length}", 71.40,
    options=image_folder_options)
