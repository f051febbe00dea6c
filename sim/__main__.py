"""``python -m antiamp``: the ``antiamp`` command (one cell of any model, ``antiamp warm``)."""

from antiamp.cli import main

if __name__ == "__main__":
    main()
