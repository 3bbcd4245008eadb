"""Shifts: one participant operating one task-seed cell, the domain under the web apps.

Layering: ``environment`` < ``mcp_client`` < ``shifts`` < ``console``, ``studies``,
``explorer``, ``jobs`` < ``config``.  This app owns the shift's models, the live episode
cache (:mod:`shifts.cache`), the call transaction (:mod:`shifts.calls`), the lifecycle
(:mod:`shifts.lifecycle`), ending and grading (:mod:`shifts.ending`,
:mod:`shifts.grading`), the deadline sweep, the briefing gate (:mod:`shifts.briefing`)
and the events other processes see (:mod:`shifts.events`).  The web apps call its
actions; it imports none of them.
"""
