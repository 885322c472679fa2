"""The options every command line of the project spells the same way, and their checks.

One syntax across ``train``, ``verify``, ``figures``, ``paper_runs``, ``lra`` and ``lra sweep``:

- seeds: ``--seed S`` for one run, ``--seeds S [S ...]`` (separate words, each seed once) for many;
- threads: ``--threads N`` (N >= 1; torch's intra-op threads);
- parameter groups: one word, groups joined by ``+`` (``--freeze qk+vo``, ``--grid freeze=none,qk+vo``,
  where the comma separates a grid's values); ``none`` for no group where the option allows it;
- progress: ``--no-progress`` (:class:`spt_theory.util.progress.Progress` otherwise);
- settings: ``--set FIELD=VALUE``, repeatable, parsed by :func:`parse_settings` only (``lra``: a
  task config field; ``train``, ``verify``, ``plateau``, ``figures``: a model field of
  :data:`~spt_theory.core.model.MODEL_SETTINGS`, :func:`parse_model_settings`); the model fields
  are spelled as :class:`~spt_theory.core.model.ModelConfig` spells them everywhere;
- an output file or folder is checked before any work (:func:`~spt_theory.util.files.prepare_output`,
  a created folder said), and every file written is announced once
  (:func:`~spt_theory.util.files.announce`), on stderr (both in :mod:`spt_theory.util.files`, so
  that the generators do the same).

The ``add_*`` functions declare an option.  Seeds, threads and the other numbers are checked as
argparse reads them (``type=`` :func:`seed`, :func:`threads`, :func:`at_least`; the :class:`Seeds`
action): a bad value is argparse's own ``error: argument --X: <why>`` after the usage, exit 2.  The
parameter groups are checked after parsing (as text, so that another spelling is refused with a
line that shows this one) by :func:`parse_groups`, which raises
:class:`~spt_theory.util.files.InputError`, printed by every command as one ``error:`` line, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import overload

from spt_theory.core.model import MODEL_SETTINGS, PARAMETER_GROUPS, ModelConfig, configured
from spt_theory.util.files import InputError, refuse_evidence

GROUP_JOIN = "+"

WRITERS = ("json", "summary", "out", "cache_dir")
"""The options through which a command writes (files or folders)."""


def refuse_evidence_outputs(args: argparse.Namespace, names: Sequence[str] = WRITERS) -> None:
    """Before any work: InputError (one ``error:`` line, exit 2) when an output option (``--json``,
    ``--summary``, ``--out``, ``--cache-dir``) names a path inside the committed evidence, however
    spelt (relative, absolute, through a link): only ``--promote`` writes there."""
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            refuse_evidence(value, "--" + name.replace("_", "-"))


def add_seeds(parser, default: Sequence[int] | None, default_text: str) -> None:
    """``--seeds S [S ...]``: distinct non-negative seeds, checked as argparse reads them (a tuple)."""
    parser.add_argument("--seeds", nargs="+", metavar="S", action=Seeds,
                        default=None if default is None else tuple(default),
                        help=f"distinct non-negative seeds, separate words (default: {default_text})")


def add_seed(parser, help_text: str = "model init, batch order and masks") -> None:
    """``--seed S``: one non-negative seed, checked by argparse (:func:`seed`); None when not
    given (the command's default, 0: :func:`parse_seed`)."""
    parser.add_argument("--seed", metavar="S", type=seed, help=f"{help_text} (default 0)")


def add_threads(parser) -> None:
    """``--threads N``: an integer >= 1 checked by argparse (:func:`threads`); None: torch's choice."""
    parser.add_argument("--threads", metavar="N", type=threads,
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


def integer(text, low: int = 0) -> int:
    """``text`` as an integer >= ``low`` (written as one, ``1`` not ``1.0``); else
    :class:`argparse.ArgumentTypeError`, which argparse prints as ``error: argument --X: <why>``."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = None
    if value is None or value < low or str(text).strip() != str(value):
        what = "a non-negative integer" if low == 0 else f"an integer >= {low}"
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type=``: an integer >= ``low`` (:func:`integer`)."""
    def check(text) -> int:
        return integer(text, low)

    check.__name__ = f"integer >= {low}"  # what argparse would name it
    return check


MAX_SEED = 2 ** 32 - 1
"""The largest seed: stage seeds (``seed * 1000 + k``, :func:`spt_theory.training.loop.stage_seed`) and every
generator seeded from it stay in range."""


def seed_value(text) -> int:
    """One seed: an integer in [0, :data:`MAX_SEED`]; :class:`argparse.ArgumentTypeError` otherwise."""
    value = integer(text, 0)
    if value > MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed is at most {MAX_SEED}, got {text!r}")
    return value


def seed(text) -> int:
    """``--seed``'s ``type=``: one non-negative seed (several are ``--seeds`` where a command takes them)."""
    if "," in str(text):
        raise argparse.ArgumentTypeError(f"one seed per run, got {str(text)!r} (where a command takes several: "
                                         f"--seeds {' '.join(str(text).replace(',', ' ').split())})")
    return seed_value(text)


def threads(text) -> int:
    """``--threads``'s ``type=``: an integer >= 1."""
    return integer(text, 1)


def seeds(texts: Sequence, option: str = "--seeds") -> tuple[int, ...]:
    """Distinct non-negative seeds, one per word; :class:`argparse.ArgumentTypeError` otherwise."""
    words = [str(t) for t in texts]
    if any("," in w for w in words):
        right = " ".join(" ".join(words).replace(",", " ").split())
        raise argparse.ArgumentTypeError(f"write the seeds as separate words: {option} {right}")
    found = tuple(seed_value(w) for w in words)
    if len(set(found)) != len(found):
        raise argparse.ArgumentTypeError(f"each seed once (distinct seeds), got {' '.join(words)}")
    return found


class Seeds(argparse.Action):
    """``--seeds``' action: the words read as :func:`seeds` (a tuple), refused by argparse
    (``error: argument --seeds: <why>``, exit 2) when they are not distinct non-negative seeds."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, seeds(values, option_string or "--seeds"))
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentError(self, str(error)) from None


def parse_seed(value, default: int = 0) -> int:
    """``--seed``'s value (checked by argparse), or ``default`` when not given."""
    return default if value is None else value


@overload
def parse_groups(words: Sequence[str] | str, option: str, *, none: str | None = None,
                 all_groups: tuple[str, ...] | None = None) -> tuple[str, ...]: ...


@overload
def parse_groups(words: None, option: str, *, none: str | None = None,
                 all_groups: tuple[str, ...] | None = None) -> None: ...


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


SETTING_ALIASES = {"layers": "n_layers", "heads": "n_heads", "ff": "d_ff"}
"""Old spellings of model fields (the LRA task configs' before they took :class:`ModelConfig`'s
names), still read by ``--set`` with a deprecation line on stderr (once per spelling and process)."""
_WARNED: set[str] = set()


def add_model_settings(parser, help_text: str | None = None) -> None:
    """``--set FIELD=VALUE`` (repeatable); read it with :func:`parse_model_settings` (a model field)
    or :func:`parse_settings` (a field of another config, e.g. an LRA task's)."""
    parser.add_argument("--set", dest="model_settings", action="append", default=[], metavar="FIELD=VALUE",
                        help=help_text or "override a model field for the runs trained (repeatable; their cache "
                             "keys change, and committed evidence made with other model settings is refused), "
                             f"one of {', '.join(MODEL_SETTINGS)}, e.g. d_model=32 (default: none, ModelConfig's)")


def registered_spelling(names: Sequence[str]) -> None:
    """Old spellings a registration fixed (``lra decide``'s 2026-12-02 ``heads`` / ``ff``): read
    without the deprecation line, which is for what a user types."""
    _WARNED.update(names)


def assignment(text) -> tuple[str, str]:
    """One ``--set`` word as ``(FIELD, VALUE)``, both stripped: the one reading of ``FIELD=VALUE``
    (an argparse ``type=``; :class:`argparse.ArgumentTypeError` without ``=`` or a field name).

    >>> assignment(" d_model = 32")
    ('d_model', '32')
    """
    name, sep, value = str(text).partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected FIELD=VALUE, got {str(text)!r}")
    return name.strip(), value.strip()


def parse_settings(texts: Sequence[str], defaults, names: Sequence[str], what: str = "model") -> dict:
    """``--set FIELD=VALUE`` words as ``{field: value}``: the one parser of ``--set``.

    Each ``FIELD`` one of ``names`` (an old spelling of :data:`SETTING_ALIASES` is read as its field,
    with a deprecation line on stderr), its value parsed as the type of that field in ``defaults``
    (a dataclass instance): an integer written as one, a float, a boolean (true / false, 1 / 0,
    yes / no), a string, or ``none`` for an optional field that is None.  The last of a field wins.
    InputError naming the word otherwise; the caller checks the config the values make."""
    settings: dict = {}
    for text in texts:
        try:
            name, value = assignment(text)
        except argparse.ArgumentTypeError:
            raise InputError(f"--set {text}: expected FIELD=VALUE, e.g. --set d_model=32") from None
        if name in SETTING_ALIASES and SETTING_ALIASES[name] in names:
            if name not in _WARNED:
                _WARNED.add(name)
                print(f"warning: --set {name}={value}: deprecated spelling, read as {SETTING_ALIASES[name]}={value} "
                      "(the model fields are spelled as ModelConfig spells them)", file=sys.stderr)
            name = SETTING_ALIASES[name]
        if name not in names:
            raise InputError(f"--set {text}: unknown {what} field {name!r}; fields: {', '.join(names)}")
        settings[name] = _setting_value(name, value, getattr(defaults, name))
    return settings


def _setting_value(name: str, text: str, current):
    """``text`` as a value of the type of ``current`` (int for an optional field that is None)."""
    if current is None and text.lower() == "none":
        return None
    if isinstance(current, bool):
        words = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
        if text.lower() not in words:
            raise InputError(f"--set {name}={text}: must be true or false")
        return words[text.lower()]
    if current is None or isinstance(current, int):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or text.lstrip("+-") != str(abs(value)):
            raise InputError(f"--set {name}={text}: must be an integer, got {text!r}")
        return value
    if isinstance(current, float):
        try:
            return float(text)
        except ValueError:
            raise InputError(f"--set {name}={text}: must be a number, got {text!r}") from None
    return text


def parse_model_settings(texts: Sequence[str]) -> dict:
    """``--set FIELD=VALUE`` words as model settings (fields of :data:`MODEL_SETTINGS`,
    :func:`parse_settings`), the model they make checked; the value a command passes down
    (``Context.model_settings``, ``FigureContext.model``, a walk run's model overrides)."""
    settings = parse_settings(texts, ModelConfig(), MODEL_SETTINGS)
    try:
        configured(settings)
    except ValueError as error:
        given = " ".join(f"--set {k}={v}" for k, v in settings.items())
        raise InputError(f"{given}: {error}") from None
    return settings
