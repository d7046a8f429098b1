import prism


def test_package_imports() -> None:
    assert prism.__version__


def test_import_prism_defers_heavy_optional_imports() -> None:
    # httpx (~90 ms) and jsonschema (~50 ms) load on first use; the CLI pays
    # import time on every call.
    import subprocess
    import sys

    probe = "import sys, prism; print(sorted({'httpx', 'jsonschema'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_python_m_prism_testing_smoke_check() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "prism.testing"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("prism.testing: 3 checks passed")
