"""Parameter sweeps over grids (see the sweeps issue); empty until then."""
