"""Check every relative markdown link of README.md, docs/*.md and figures/README.md: the target
path exists and, where a #fragment is given for a markdown file, a heading makes that anchor."""
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
ALLOWED_MISSING = {"docs/claims.md"}  # generated elsewhere, appears later

def anchors(md: Path) -> set[str]:
    out, in_code = set(), False
    for line in md.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        text = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        out.add(text)
    return out

bad = 0
n = 0
files = [ROOT / "README.md", ROOT / "figures" / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "docs" / "preregistration").glob("*.md"))]
for f in files:
    text = re.sub(r"```.*?```", "", f.read_text(), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        n += 1
        path, _, frag = target.partition("#")
        dest = (f.parent / path).resolve() if path else f
        rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        if not dest.is_relative_to(ROOT):
            print(f"{f.relative_to(ROOT)}: {target}: leaves the repository")
            bad += 1
            continue
        if not dest.exists():
            if rel in ALLOWED_MISSING:
                continue
            print(f"{f.relative_to(ROOT)}: {target}: no such file")
            bad += 1
            continue
        if frag and dest.suffix == ".md" and frag not in anchors(dest):
            print(f"{f.relative_to(ROOT)}: {target}: no heading for #{frag}")
            bad += 1
print(f"{n} links in {len(files)} files, {bad} broken")
sys.exit(1 if bad else 0)
