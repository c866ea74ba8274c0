"""Stand-ins for hardware and libraries a machine may lack, so tasks and tests run anywhere.

One file per thing faked: ``timing`` (an asynchronous device and a timer audit).
Modules' tasks build their cases from these; nothing here knows a module.
"""
from .timing import FakeAsyncDevice, audit_timer

__all__ = ["FakeAsyncDevice", "audit_timer"]
