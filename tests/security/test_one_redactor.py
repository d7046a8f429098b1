"""One redactor: every public Prism API that can see a secret takes the
agent's ``SecretRedactor`` (required), never a raw list of secrets and never
a silent no-op default. An AST scan of python/prism keeps it that way."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "prism"

# Where a raw list of secrets is still the input, and why.
TAKES_SECRETS = {
    # Secrets are configured once, on the agent, which builds the one redactor.
    # (``create_agent``'s parameters are the fields of ``AgentOptions``.)
    "runtime/config.py:AgentOptions",
    # The redactor's own constructors and normalizers.
    "security/redaction.py:create_redactor",
    "security/redaction.py:normalize_secrets",
    # A test helper that checks the given secrets never appear: it needs the values.
    "testing/provider_conformance.py:assert_no_secret_leak",
    # The HTTP adapters' shared base: the keys the provider itself sends,
    # known up front (``api_key``), masked from the first request; the
    # agent's secrets arrive as its redactor. Factories take only a redactor.
    "providers/_http_stream.py:HttpStreamProvider.__init__",
}


# APIs that still default their redactor: none. Kept (empty) so the scan
# below names any new one.
DEFAULTS_ITS_REDACTOR: set[str] = set()


def public_parameters() -> list[tuple[str, str, ast.arg, ast.expr | None]]:
    """(where, function, parameter, default) for every public function and
    method of every public module, and every field of a public TypedDict
    (``create_agent(**options: Unpack[AgentOptions])`` takes its fields)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(body: list[ast.stmt], prefix: str, rel: str = rel) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    visit(node.body, f"{prefix}{node.name}.")
                    if _is_typed_dict(node):
                        for field in node.body:
                            if isinstance(field, ast.AnnAssign) and isinstance(
                                field.target, ast.Name
                            ):
                                arg = ast.arg(arg=field.target.id, annotation=field.annotation)
                                found.append((rel, prefix + node.name, arg, field.value))
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    if node.name.startswith("_") and node.name != "__init__":
                        continue
                    name = prefix + node.name
                    args = node.args
                    positional = [*args.posonlyargs, *args.args]
                    defaults: list[ast.expr | None] = [None] * (
                        len(positional) - len(args.defaults)
                    ) + list(args.defaults)
                    pairs = [*zip(positional, defaults, strict=True)]
                    pairs += [*zip(args.kwonlyargs, args.kw_defaults, strict=True)]
                    for arg, default in pairs:
                        found.append((rel, name, arg, default))

        visit(tree.body, "")
    return found


def _is_typed_dict(node: ast.ClassDef) -> bool:
    # A TypedDict, or a subclass of a private TypedDict in the same module.
    names = {base.id for base in node.bases if isinstance(base, ast.Name)}
    return "TypedDict" in names or any(name.endswith("Options") for name in names)


def test_no_public_api_defaults_its_redactor() -> None:
    silent = {
        f"{where}:{name}"
        for where, name, arg, default in public_parameters()
        if arg.arg == "redactor" and default is not None
    }
    assert silent <= DEFAULTS_ITS_REDACTOR, sorted(silent - DEFAULTS_ITS_REDACTOR)
    stale = DEFAULTS_ITS_REDACTOR - silent
    assert not stale, f"stale allowlist entries: {sorted(stale)}"


def test_no_public_api_takes_a_raw_secret_list() -> None:
    raw = {
        f"{where}:{name}"
        for where, name, arg, _ in public_parameters()
        if arg.arg in {"secrets", "credential_secrets"}
    }
    assert raw <= TAKES_SECRETS, sorted(raw - TAKES_SECRETS)
    assert TAKES_SECRETS <= raw, f"stale allowlist entries: {sorted(TAKES_SECRETS - raw)}"


def test_the_scan_sees_defaults() -> None:
    tree = ast.parse("def f(a, redactor=NOOP, *, secrets=()):\n    pass\n")
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    assert [a.arg for a in function.args.args] == ["a", "redactor"]
    assert public_parameters()  # the package itself is found
