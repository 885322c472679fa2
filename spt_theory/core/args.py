"""The options every command line of the project spells the same way, and their checks.

One syntax across ``train``, ``verify``, ``figures``, ``paper_runs``, ``lra`` and ``lra sweep``:

- seeds: ``--seed S`` for one run, ``--seeds S [S ...]`` (separate words, each seed once) for many;
- threads: ``--threads N`` (N >= 1; torch's intra-op threads);
- parameter groups: one word, groups joined by ``+`` (``--freeze qk+vo``, ``--grid freeze=none,qk+vo``,
  where the comma separates a grid's values); ``none`` for no group where the option allows it;
- progress: ``--no-progress`` (:class:`spt_theory.util.progress.Progress` otherwise);
- settings: ``--set FIELD=VALUE``, repeatable (``lra``: a task config field; ``verify``, ``figures``:
  a model field of :data:`~spt_theory.core.model.MODEL_SETTINGS`, :func:`parse_model_settings`);
- an output file or folder is checked before any work (:func:`prepare_output`, a created folder
  said), and every file written is announced once (:func:`announce`), on stderr (both from
  :mod:`spt_theory.util.io`, defined in :mod:`spt_theory.util.files` so that the generators do the same).

The ``add_*`` functions declare an option; the parsing functions check what argparse collected
(as text, so that another spelling is refused with a line that shows this one) and raise
:class:`~spt_theory.util.io.InputError`, which every command prints as one ``error:`` line, exit 2.
"""

from __future__ import annotations

from collections.abc import Sequence

from spt_theory.core.model import MODEL_SETTINGS, PARAMETER_GROUPS, ModelConfig, configured
from spt_theory.util.io import InputError, announce, prepare_output  # noqa: F401 (the commands' output helpers)

GROUP_JOIN = "+"


def add_seeds(parser, default: Sequence[int] | None, default_text: str) -> None:
    """``--seeds S [S ...]``; read it with :func:`parse_seeds`."""
    parser.add_argument("--seeds", nargs="+", metavar="S", default=None if default is None else
                        [str(s) for s in default],
                        help=f"distinct non-negative seeds, separate words (default: {default_text})")


def add_seed(parser, help_text: str = "model init, batch order and masks") -> None:
    """``--seed S`` (default 0); read it with :func:`parse_seed`."""
    parser.add_argument("--seed", metavar="S", help=f"{help_text} (default 0)")


def add_threads(parser) -> None:
    """``--threads N``; read it with :func:`parse_threads`."""
    parser.add_argument("--threads", metavar="N",
                        help="torch intra-op threads (default: torch's choice); 1 is much faster for "
                             "these small models on a busy machine")


def add_no_progress(parser) -> None:
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (default: bars on a terminal, else one line per stage, "
                             "epoch or claim on stderr)")


def add_groups(parser, option: str, help_text: str, default_text: str) -> None:
    """A parameter-group option (``--freeze``, ``--keep``); read it with :func:`parse_groups`.  It
    takes several words only to refuse them with the right spelling."""
    parser.add_argument(option, nargs="+", metavar="GROUPS",
                        help=f"{help_text}; groups joined by '{GROUP_JOIN}' ({GROUP_JOIN.join(PARAMETER_GROUPS[:2])}), "
                             f"of {', '.join(PARAMETER_GROUPS)} (default: {default_text})")


def _integer(text, option: str, low: int) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = None
    if value is None or value < low or str(text).strip() != str(value):
        what = "a non-negative integer" if low == 0 else f"an integer >= {low}"
        raise InputError(f"{option}: must be {what}, got {text!r}")
    return value


def parse_seed(text, option: str = "--seed", default: int = 0) -> int:
    """One seed (``default`` when not given); several are ``--seeds`` where a command takes them."""
    if text is None:
        return default
    if "," in str(text):
        raise InputError(f"{option} {text}: one seed per run (where a command takes several: "
                         f"--seeds {' '.join(str(text).replace(',', ' ').split())})")
    return _integer(text, option, 0)


def parse_seeds(texts: Sequence | None, option: str = "--seeds") -> tuple[int, ...] | None:
    """Distinct non-negative seeds, one per word (None when not given)."""
    if texts is None:
        return None
    words = [str(t) for t in texts]
    if any("," in w for w in words):
        right = " ".join(" ".join(words).replace(",", " ").split())
        raise InputError(f"{option} {' '.join(words)}: write the seeds as separate words: {option} {right}")
    seeds = tuple(_integer(w, option, 0) for w in words)
    if len(set(seeds)) != len(seeds):
        raise InputError(f"{option}: each seed once (distinct seeds), got {' '.join(words)}")
    return seeds


def parse_threads(text) -> int | None:
    """``--threads``: None (torch's choice) or an integer >= 1."""
    return None if text is None else _integer(text, "--threads", 1)


def parse_groups(words: Sequence[str] | str | None, option: str, *, none: str | None = None,
                 all_groups: tuple[str, ...] | None = None) -> tuple[str, ...] | None:
    """Parameter groups written as one word joined by ``+`` (None when not given).  ``none`` (the
    word for no group, e.g. ``none``) and ``all_groups`` (what ``all`` stands for) where allowed."""
    if words is None:
        return None
    words = [words] if isinstance(words, str) else list(words)
    sep = " " if option.startswith("-") else "="  # an option (--freeze qk) or a sweep axis (freeze=qk)
    given = " ".join(words)
    if len(words) > 1 or "," in given:
        right = GROUP_JOIN.join(given.replace(",", " ").split())
        raise InputError(f"{option}{sep}{given}: join the groups with '{GROUP_JOIN}': {option}{sep}{right}")
    text = words[0].strip()
    if none is not None and text == none:
        return ()
    if all_groups is not None and text == "all":
        return all_groups
    groups = tuple(text.split(GROUP_JOIN))
    for group in groups:
        if group not in PARAMETER_GROUPS:
            extra = "".join(f", or {word}" for word, ok in ((none, none), ("all", all_groups)) if ok is not None)
            raise InputError(f"{option}{sep}{text}: unknown group {group!r}; groups: {', '.join(PARAMETER_GROUPS)}"
                             f" joined by '{GROUP_JOIN}'{extra}")
    if len(set(groups)) != len(groups):
        raise InputError(f"{option}{sep}{text}: each group once")
    return groups


def join_groups(groups: Sequence[str]) -> str:
    """Groups as the command line writes them (``qk+vo``)."""
    return GROUP_JOIN.join(groups)


def add_model_settings(parser) -> None:
    """``--set FIELD=VALUE`` (repeatable) on a model field; read it with :func:`parse_model_settings`."""
    parser.add_argument("--set", dest="model_settings", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a model field for the runs trained (repeatable; their cache keys "
                             "change, and committed evidence made with other model settings is refused), "
                             f"one of {', '.join(MODEL_SETTINGS)}, e.g. d_model=32")


def parse_model_settings(texts: Sequence[str]) -> dict:
    """``--set FIELD=VALUE`` words as model settings (:func:`spt_theory.core.model.model_settings`),
    each value parsed as the field's type and the model they make checked; the last of a field wins."""
    defaults = ModelConfig()
    settings: dict = {}
    for text in texts:
        name, sep, value = str(text).partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise InputError(f"--set {text}: expected FIELD=VALUE, e.g. --set d_model=32")
        if name not in MODEL_SETTINGS:
            raise InputError(f"--set {text}: unknown model field {name!r}; fields: {', '.join(MODEL_SETTINGS)}")
        if isinstance(getattr(defaults, name), int):
            settings[name] = _integer(value, f"--set {name}", 1)
        else:
            settings[name] = value
    try:
        configured(**settings)
    except ValueError as error:
        given = " ".join(f"--set {k}={v}" for k, v in settings.items())
        raise InputError(f"{given}: {error}") from None
    return settings
