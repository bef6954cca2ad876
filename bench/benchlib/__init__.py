# SPDX-License-Identifier: LGPL-2.1-or-later
"""bench/run in parts: one module per job (see bench/run)."""
