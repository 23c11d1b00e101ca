"""sparsejit.Error and one subclass per sj_status, carrying the library's message."""
from . import _lib


class Error(Exception):
    """A failed library call: `status` is the sj_status number, `message` the library's text."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class NullPointerError(Error):
    status = 1


class InvalidArgumentError(Error, ValueError):
    status = 2


class InvalidTensorError(Error, ValueError):
    status = 3


class ShapeMismatchError(Error, ValueError):
    status = 4


class TypeMismatchError(Error, TypeError):
    status = 5


class FormatError(Error, ValueError):
    status = 6


class IndexOverflowError(Error, OverflowError):
    status = 7


class OutOfMemoryError(Error, MemoryError):
    status = 8


class IOFailedError(Error, OSError):
    status = 9


class ParseError(Error, ValueError):
    status = 10


class UnsupportedError(Error):
    status = 11


class JitError(Error):
    status = 12


class CacheError(Error):
    status = 13


class InternalError(Error):
    status = 14


_BY_STATUS = {cls.status: cls for cls in Error.__subclasses__()}


def check(status):
    """Raises the Error subclass for a non-zero sj_status with the thread's last message."""
    if status == 0:
        return
    message = (_lib.sj_last_error_message() or b"").decode("utf-8", "replace")
    name = (_lib.sj_status_string(status) or b"").decode()
    cls = _BY_STATUS.get(status, Error)
    raise cls(f"{message} [{name}]" if message else name, status)
