/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* libiver: the measurement core of iverd. */
#include "iver/cache.h"
#include "iver/check.h"
#include "iver/cookie.h"
#include "iver/digest.h"
#include "iver/ledger.h"
#include "iver/measure.h"
#include "iver/stat.h"
