from metadisco.cli import main

raise SystemExit(main())
