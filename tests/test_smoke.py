import prism


def test_package_imports() -> None:
    assert prism.__version__
