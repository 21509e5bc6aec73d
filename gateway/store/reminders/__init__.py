"""Reminders and scheduled tasks: the ledger of what is due when and how each due time went."""

from gateway.store.reminders.ledger import (
    Advance,
    ClaimedOccurrence,
    NewReminder,
    ReminderMethods,
    ReminderRecord,
)

__all__ = ["Advance", "ClaimedOccurrence", "NewReminder", "ReminderMethods", "ReminderRecord"]
