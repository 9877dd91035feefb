"""The torch importer's error: a torch.export program dlvm cannot represent faithfully."""
from __future__ import annotations

from frontends.base.errors import FrontendError


class TorchImportError(FrontendError):
    pass
