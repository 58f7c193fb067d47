from smoldata_tui.cli import main

raise SystemExit(main())
