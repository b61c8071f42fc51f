from simulation.forms import InstrumentImportForm

__all__ = ["InstrumentImportForm"]
