"""``python -m kubesim``: the same command line as the ``kubesim`` script."""

from kubesim.cli.main import main

raise SystemExit(main())
