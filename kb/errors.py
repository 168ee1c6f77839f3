"""Domain errors raised by the library; each message names the fix."""


class KbError(Exception):
    """Base class: the CLI and the app turn these into one-line messages."""


class BadInput(KbError):
    """The user's input (query, file, JSON) cannot be used as given."""


class ArticleError(KbError):
    """An article file cannot be parsed; the message names the file and the field."""


class IndexNotFound(KbError):
    """No index on disk where one was expected."""


class IndexStale(KbError):
    """The index on disk was built from other articles or another embedding model."""


class CorruptIndex(KbError):
    """An index file is unreadable or inconsistent with its manifest."""


class ModelUnavailable(KbError):
    """A configured embedding or language model cannot be loaded here."""
