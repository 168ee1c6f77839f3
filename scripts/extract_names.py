#!/usr/bin/env python3
"""Regenerate the name lists in kb/names/ from local checkouts of the target tools.

`kb validate` checks every config key / CLI flag used in an article's snippet against
these lists.  The tools themselves cannot be installed here (GPU-only, heavy), so the
names are read statically from their source with the `ast` module:

* dataclass / pydantic fields (class-body annotated assignments, following base classes
  across modules, incl. pydantic ``Field(alias=...)``),
* ``parser.add_argument("--flag", ...)`` calls,
* string constants of DeepSpeed's ``constants.py`` / ``config.py`` modules.

Usage (see kb/names/README.md for the exact commands used):

    python scripts/extract_names.py LIST --repo LABEL=PATH [--repo LABEL=PATH ...] \
        [--transformers LABEL=PATH ...] [--trl LABEL=PATH ...] [--out FILE]

LIST is one of: deepspeed_config, llamafactory_args, openrlhf_args, medicalgpt_args,
ms_swift_args, hf_example_script_args.

--repo PATH is the root of a checkout (or `git archive` export) of the tool.
--transformers / --trl PATH is the *package directory* (.../site-packages/transformers).

The first --repo / --transformers / --trl is the primary source.  Every further source
is extracted in combination with the primary ones and its names are added to the list
(union); names that are absent from the primary source are named in a header comment
together with the sources that have them (e.g. flags removed in a newer release).
"""

from __future__ import annotations

import argparse
import ast
import datetime
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
KEY_VALUE = re.compile(r"^[a-z][a-z0-9_]*$")


# --------------------------------------------------------------------------- modules


@dataclass
class Module:
    path: Path
    tree: ast.Module
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    # local name -> (module name, level, original name)
    imports: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    # module-level `A = B` (also inside if/else/try): A -> [B, ...]
    aliases: dict[str, list[str]] = field(default_factory=dict)


_MODULE_CACHE: dict[Path, Module | None] = {}


def load_module(path: Path) -> Module | None:
    path = path.resolve()
    if path in _MODULE_CACHE:
        return _MODULE_CACHE[path]
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except (SyntaxError, OSError, ValueError) as exc:
        print(f"warning: cannot parse {path}: {exc}", file=sys.stderr)
        _MODULE_CACHE[path] = None
        return None
    mod = Module(path=path, tree=tree)

    def visit_block(stmts: list[ast.stmt]) -> None:
        for node in stmts:
            if isinstance(node, ast.ClassDef):
                mod.classes.setdefault(node.name, node)
            elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
                target = _dotted_tail(node.value)
                for t in node.targets:
                    if isinstance(t, ast.Name) and target:
                        mod.aliases.setdefault(t.id, []).append(target)
            elif isinstance(node, (ast.If, ast.Try)):
                visit_block(node.body)
                visit_block(node.orelse)
                for h in getattr(node, "handlers", []):
                    visit_block(h.body)
                visit_block(getattr(node, "finalbody", []))

    visit_block(tree.body)
    # imports anywhere in the file (TRL imports inside functions)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                mod.imports.setdefault(a.asname or a.name, []).append(
                    (node.module or "", node.level, a.name)
                )
    _MODULE_CACHE[path] = mod
    return mod


def _dotted_tail(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class Resolver:
    """Finds the ClassDef behind a name, following imports between the given packages."""

    def __init__(self, packages: dict[str, Path]):
        # top-level package name -> package directory
        self.packages = {k: v.resolve() for k, v in packages.items() if v is not None}
        self._class_index: dict[str, dict[str, list[Path]]] = {}

    def module_file(self, modname: str, level: int, from_file: Path) -> Path | None:
        if level:
            base = from_file.parent
            for _ in range(level - 1):
                base = base.parent
            parts = modname.split(".") if modname else []
        else:
            parts = modname.split(".")
            if not parts or parts[0] not in self.packages:
                return None
            base = self.packages[parts[0]]
            parts = parts[1:]
        p = base.joinpath(*parts) if parts else base
        if p.with_suffix(".py").is_file() and parts:
            return p.with_suffix(".py")
        if (p / "__init__.py").is_file():
            return p / "__init__.py"
        return None

    def _top_package(self, modname: str, level: int, from_file: Path) -> str | None:
        if not level:
            top = modname.split(".")[0]
            return top if top in self.packages else None
        for name, root in self.packages.items():
            try:
                from_file.resolve().relative_to(root)
                return name
            except ValueError:
                continue
        return None

    def global_lookup(
        self, package: str, clsname: str, near: Path | None = None
    ) -> list[tuple[ast.ClassDef, Module]]:
        """Last resort for lazily re-exported names (transformers/trl __init__ magic)."""
        idx = self._class_index.get(package)
        if idx is None:
            idx = {}
            root = self.packages[package]
            for f in sorted(root.rglob("*.py")):
                text = f.read_text(encoding="utf-8", errors="replace")
                for m in re.finditer(r"^class\s+(\w+)", text, re.M):
                    idx.setdefault(m.group(1), []).append(f)
            self._class_index[package] = idx
        files = idx.get(clsname, [])
        if not files:
            return []

        def rank(f: Path) -> tuple:
            inside = 0 if (near is not None and near in f.parents) else 1
            return (inside, "experimental" in f.parts, "megatron" in f.parts, len(f.parts), str(f))

        best = sorted(files, key=rank)[0]
        mod = load_module(best)
        if mod and clsname in mod.classes:
            return [(mod.classes[clsname], mod)]
        return []

    def resolve(self, name: str, mod: Module, depth: int = 0) -> list[tuple[ast.ClassDef, Module]]:
        if depth > 25:
            return []
        if name in mod.classes:
            return [(mod.classes[name], mod)]
        out: list[tuple[ast.ClassDef, Module]] = []
        for target in mod.aliases.get(name, []):
            if target != name:
                out += self.resolve(target, mod, depth + 1)
        if out:
            return out
        for modname, level, orig in mod.imports.get(name, []):
            f = self.module_file(modname, level, mod.path)
            found: list[tuple[ast.ClassDef, Module]] = []
            if f is not None:
                sub = load_module(f)
                if sub is not None and sub is not mod:
                    found = self.resolve(orig, sub, depth + 1)
            if not found:
                pkg = self._top_package(modname, level, mod.path)
                if pkg:
                    near = f.parent if f is not None else None
                    found = self.global_lookup(pkg, orig, near)
            out += found
        return out


# ------------------------------------------------------------------ field extraction


def _is_classvar(ann: ast.expr) -> bool:
    s = ast.unparse(ann)
    return s.startswith("ClassVar") or s.startswith("typing.ClassVar")


def _field_call_kw(value: ast.expr | None, kw: str) -> ast.expr | None:
    if isinstance(value, ast.Call) and _dotted_tail(value.func) in {"field", "Field"}:
        for k in value.keywords:
            if k.arg == kw:
                return k.value
    return None


def own_fields(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        if name.startswith("_") or name == "model_config" or _is_classvar(node.annotation):
            continue
        init = _field_call_kw(node.value, "init")
        if isinstance(init, ast.Constant) and init.value is False:
            continue  # not accepted by the constructor / HfArgumentParser
        names.add(name)
        alias = _field_call_kw(node.value, "alias")
        if isinstance(alias, ast.Constant) and isinstance(alias.value, str):
            names.add(alias.value)
    return names


def class_fields(
    cls: ast.ClassDef, mod: Module, resolver: Resolver, seen: set | None = None
) -> set[str]:
    seen = set() if seen is None else seen
    key = (mod.path, cls.name)
    if key in seen:
        return set()
    seen.add(key)
    names = own_fields(cls)
    for base in cls.bases:
        bname = _dotted_tail(base)
        if not bname or bname in {"object", "ABC", "Generic", "Enum"}:
            continue
        targets = resolver.resolve(bname, mod)
        # a base that resolves to the class itself (e.g. `class X(HfX)` with same name) must go
        # through the import, not the local definition
        targets = [(c, m) for c, m in targets if (m.path, c.name) != key] or [
            t for t in _resolve_import_only(bname, mod, resolver) if (t[1].path, t[0].name) != key
        ]
        for bcls, bmod in targets:
            names |= class_fields(bcls, bmod, resolver, seen)
    return names


def _resolve_import_only(name: str, mod: Module, resolver: Resolver):
    out = []
    for modname, level, orig in mod.imports.get(name, []):
        f = resolver.module_file(modname, level, mod.path)
        if f is not None:
            sub = load_module(f)
            if sub is not None and sub is not mod:
                out += resolver.resolve(orig, sub)
    return out


def is_dataclass_def(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if _dotted_tail(target) == "dataclass":
            return True
    return False


def dataclass_roots(files: list[Path]) -> list[tuple[ast.ClassDef, Module]]:
    out = []
    for f in files:
        mod = load_module(f)
        if mod is None:
            continue
        for cls in mod.classes.values():
            if is_dataclass_def(cls):
                out.append((cls, mod))
    return out


def parser_roots(files: list[Path], resolver: Resolver) -> list[tuple[ast.ClassDef, Module]]:
    """Classes handed to HfArgumentParser / TrlParser (directly or via `dataclass_types`)."""
    out = []
    for f in files:
        mod = load_module(f)
        if mod is None:
            continue
        names: list[str] = []
        for node in ast.walk(mod.tree):
            exprs: list[ast.expr] = []
            if (
                isinstance(node, ast.Call)
                and (_dotted_tail(node.func) or "").endswith("Parser")
                and node.args
            ):
                exprs.append(node.args[0])
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "dataclass_types" for t in node.targets
            ):
                exprs.append(node.value)
            for e in exprs:
                elts = e.elts if isinstance(e, (ast.Tuple, ast.List)) else [e]
                names += [n for n in (_dotted_tail(x) for x in elts) if n and n[0].isupper()]
        for n in dict.fromkeys(names):
            found = resolver.resolve(n, mod)
            if not found:
                print(f"warning: {f.name}: cannot resolve parser class {n}", file=sys.stderr)
            out += found
    return out


def argparse_flags(files: list[Path]) -> set[str]:
    names: set[str] = set()
    for f in files:
        mod = load_module(f)
        if mod is None:
            continue
        for node in ast.walk(mod.tree):
            if not (isinstance(node, ast.Call) and _dotted_tail(node.func) == "add_argument"):
                continue
            opts = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            longs = [o for o in opts if o.startswith("--")]
            for o in longs or [o for o in opts if o.startswith("-")] or opts:
                names.add(o.lstrip("-"))
    return names


# ------------------------------------------------------------------ the lists


def _pkg(p: Path | None, name: str) -> dict[str, Path]:
    return {name: p} if p is not None else {}


def extract_deepspeed(repo: Path, tf: Path | None, trl: Path | None) -> set[str]:
    ds = repo / "deepspeed"
    skip_dirs = {
        "inference",
        "launcher",
        "checkpoint",
        "nvme",
        "ops",
        "module_inject",
        "model_implementations",
    }
    files = [
        f
        for f in sorted(ds.rglob("*.py"))
        if re.match(r"^(constants|config|.*_config|config_utils|lr_schedules)\.py$", f.name)
        and not skip_dirs & set(f.relative_to(ds).parts[:-1])
    ]
    resolver = Resolver({"deepspeed": ds})
    names: set[str] = set()
    for f in files:
        mod = load_module(f)
        if mod is None:
            continue
        # 1. UPPER_CASE = "lower_case_key" constants (skip defaults / format help strings)
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                v = node.value.value
                for t in node.targets:
                    if (
                        isinstance(t, ast.Name)
                        and t.id.isupper()
                        and isinstance(v, str)
                        and KEY_VALUE.match(v)
                        and not re.search(r"(_DEFAULT|FORMAT|_DEFAULT_\w+)$", t.id)
                        and "DEFAULT" not in t.id
                    ):
                        names.add(v)
            # 2. literal keys read from the config dict:
            #    get_scalar_param(d, "key", ...), d.get("key"), d["key"]
            if isinstance(node, ast.Call):
                fn = _dotted_tail(node.func) or ""
                arg = None
                if re.match(r"^get_\w*param$", fn) and len(node.args) >= 2:
                    arg = node.args[1]
                elif (
                    fn in {"get", "pop", "setdefault"}
                    and node.args
                    and isinstance(node.func, ast.Attribute)
                ):
                    recv = ast.unparse(node.func.value)
                    if re.search(r"param|config|dict", recv, re.I):
                        arg = node.args[0]
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and KEY_VALUE.match(arg.value)
                ):
                    names.add(arg.value)
            # 3. keys of literal default dicts, e.g. get_pipeline_config's {"stages": "auto", ...}
            if (
                isinstance(node, ast.Dict)
                and node.keys
                and all(
                    isinstance(k, ast.Constant)
                    and isinstance(k.value, str)
                    and KEY_VALUE.match(k.value)
                    for k in node.keys
                )
            ):
                names |= {k.value for k in node.keys}
        # 4. pydantic config models: fields + aliases
        for cls in mod.classes.values():
            if any(_dotted_tail(b) not in {"Enum", "str", "int"} for b in cls.bases):
                names |= class_fields(cls, mod, resolver)
    # 5. "optimizer": {"params": {...}} is passed to DeepSpeed's own optimizers' constructors
    opt_dirs = [ds / "ops" / d for d in ("adam", "adagrad", "lamb", "lion")] + [
        ds / "runtime" / "fp16" / "onebit"
    ]
    for f in sorted(x for d in opt_dirs if d.is_dir() for x in d.glob("*.py")):
        mod = load_module(f)
        if mod is None:
            continue
        for cls in mod.classes.values():
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    a = fn.args
                    names |= {
                        x.arg
                        for x in a.posonlyargs + a.args[1:] + a.kwonlyargs
                        if KEY_VALUE.match(x.arg)
                    }
    return names


def extract_llamafactory(repo: Path, tf: Path | None, trl: Path | None) -> set[str]:
    hp = repo / "src" / "llamafactory" / "hparams"
    resolver = Resolver(
        {
            "llamafactory": repo / "src" / "llamafactory",
            **_pkg(tf, "transformers"),
            **_pkg(trl, "trl"),
        }
    )
    names: set[str] = set()
    for cls, mod in dataclass_roots(sorted(hp.glob("*.py"))):
        names |= class_fields(cls, mod, resolver)
    return names


def extract_openrlhf(repo: Path, tf: Path | None, trl: Path | None) -> set[str]:
    files = sorted(
        f
        for d in ("openrlhf/cli", "examples", "examples/scripts")
        for f in (repo / d).glob("train_*.py")
        if (repo / d).is_dir()
    )
    return argparse_flags(files)


def extract_medicalgpt(repo: Path, tf: Path | None, trl: Path | None) -> set[str]:
    base = repo / "training" if (repo / "training").is_dir() else repo
    files = sorted(f for f in base.glob("*.py") if f.name not in {"template.py", "tool_utils.py"})
    resolver = Resolver({**_pkg(tf, "transformers"), **_pkg(trl, "trl")})
    names: set[str] = set()
    for cls, mod in parser_roots(files, resolver):
        names |= class_fields(cls, mod, resolver)
    names |= argparse_flags(files)
    return names


def extract_ms_swift(repo: Path, tf: Path | None, trl: Path | None) -> set[str]:
    swift = repo / "swift"
    arg_dirs = [swift / "arguments", swift / "llm" / "argument"]  # v4.x, v3.x layout
    files = sorted(f for d in arg_dirs if d.is_dir() for f in d.rglob("*.py"))
    if not files:
        raise SystemExit(f"no swift/arguments or swift/llm/argument in {repo}")
    resolver = Resolver({"swift": swift, **_pkg(tf, "transformers"), **_pkg(trl, "trl")})
    names: set[str] = set()
    for cls, mod in dataclass_roots(files):
        names |= class_fields(cls, mod, resolver)
    return names


def extract_hf_examples(repo: Path, tf: Path | None, trl: Path | None) -> set[str]:
    """repo: a directory holding the HF example scripts (run_clm.py, ...), searched recursively.

    Only the scripts' own dataclasses; TrainingArguments itself is not included (kb adds it).
    TRL: the classes its CLI scripts (trl/scripts/*.py) hand to TrlParser, without following
    into transformers.TrainingArguments.
    """
    names: set[str] = set()
    resolver = Resolver({})
    for cls, mod in dataclass_roots(sorted(repo.rglob("run_*.py"))):
        names |= class_fields(cls, mod, resolver)
    if trl is not None:
        tresolver = Resolver({"trl": trl})
        scripts = sorted(
            f for f in (trl / "scripts").glob("*.py") if f.name not in {"vllm_serve.py", "env.py"}
        )
        for cls, mod in parser_roots(scripts, tresolver):
            names |= class_fields(cls, mod, tresolver)
    return names


EXTRACTORS = {
    "deepspeed_config": extract_deepspeed,
    "llamafactory_args": extract_llamafactory,
    "openrlhf_args": extract_openrlhf,
    "medicalgpt_args": extract_medicalgpt,
    "ms_swift_args": extract_ms_swift,
    "hf_example_script_args": extract_hf_examples,
}


def _labelled(s: str) -> tuple[str, Path]:
    if "=" not in s:
        return (s, Path(s))
    label, path = s.rsplit("=", 1)
    return label, Path(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("list", choices=sorted(EXTRACTORS))
    ap.add_argument(
        "--repo", action="append", required=True, type=_labelled, help="LABEL=PATH of a checkout"
    )
    ap.add_argument(
        "--transformers",
        action="append",
        default=[],
        type=_labelled,
        help="LABEL=PATH of the package dir",
    )
    ap.add_argument(
        "--trl", action="append", default=[], type=_labelled, help="LABEL=PATH of the package dir"
    )
    ap.add_argument("--out", type=Path, help="output file (default: stdout)")
    args = ap.parse_args(argv)
    fn = EXTRACTORS[args.list]

    tf0 = args.transformers[0] if args.transformers else (None, None)
    trl0 = args.trl[0] if args.trl else (None, None)
    primary = fn(args.repo[0][1], tf0[1], trl0[1])
    if not primary:
        raise SystemExit("primary source gave no names: wrong path?")
    extra: dict[str, list[str]] = {}  # name -> labels of non-primary sources that have it
    combos = [(r, tf0, trl0) for r in args.repo[1:]]
    combos += [(args.repo[0], t, trl0) for t in args.transformers[1:]]
    combos += [(args.repo[0], tf0, t) for t in args.trl[1:]]
    for (rl, rp), (tl, tp), (ql, qp) in combos:
        label = next(
            lbl for lbl, src in ((rl, args.repo[0][0]), (tl, tf0[0]), (ql, trl0[0])) if lbl != src
        )
        for n in sorted(fn(rp, tp, qp) - primary):
            extra.setdefault(n, []).append(label)
    names = primary | set(extra)
    bad = sorted(n for n in names if not n or any(c.isspace() for c in n))
    if bad:
        raise SystemExit(f"odd names: {bad[:10]}")

    lines = [
        f"# kb/names/{args.list}.txt -- generated by scripts/extract_names.py {args.list};"
        " do not edit by hand",
        f"# generated: {datetime.date.today().isoformat()}",
        f"# primary source: {args.repo[0][0]}",
    ]
    lines += [f"# + transformers: {t[0]}" for t in args.transformers[:1]]
    lines += [f"# + trl: {t[0]}" for t in args.trl[:1]]
    for lbl, _ in args.repo[1:] + args.transformers[1:] + args.trl[1:]:
        lines.append(f"# also unioned: {lbl}")
    if extra:
        lines.append(
            f"# {len(extra)} names below are NOT in the primary source, only in (first..last):"
        )
        for n in sorted(extra):
            labels = extra[n]
            span = (
                labels[0]
                if len(labels) == 1
                else f"{labels[0]} .. {labels[-1]} ({len(labels)} sources)"
            )
            lines.append(f"#   {n}: {span}")
    lines += sorted(names)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(
            f"{args.out}: {len(names)} names ({len(extra)} only in non-primary sources)",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
