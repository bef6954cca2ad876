/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* libiver: the measurement core of iverd. */
#include "iver/cache.h"
#include "iver/appraise.h"
#include "iver/check.h"
#include "iver/cookie.h"
#include "iver/digest.h"
#include "iver/imalog.h"
#include "iver/ledger.h"
#include "iver/measure.h"
#include "iver/policy.h"
#include "iver/snapshot.h"
#include "iver/stat.h"
#include "iver/tpm.h"
