"""Where the corpus data files live."""

from __future__ import annotations

import os
from pathlib import Path

from producers.corpus.functions import CorpusDataError

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR_ENV = "RESHAPER_DATA_DIR"


def data_dir() -> Path:
    """``$RESHAPER_DATA_DIR`` if set, else ``<repo root>/../shared/data`` (a checkout keeps
    the shared data folder beside the repository)."""
    configured = os.environ.get(DATA_DIR_ENV)
    path = Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        how = f"${DATA_DIR_ENV}={configured}" if configured else f"the default {path}"
        raise CorpusDataError(
            f"corpus data directory not found ({how}); set ${DATA_DIR_ENV} to the folder "
            "that holds mbpp/mbpp.jsonl")
    return path
