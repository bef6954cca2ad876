/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/tpm.c without a TPM: the error classes of real TSS2 return codes (the
 * TPM thread retries, reconnects or gives up by them) and the "none" TCTI. */
#include <check.h>
#include <errno.h>
#include <tss2/tss2_common.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tcti.h>
#include <tss2/tss2_tpm2_types.h>

#include "check-run.h"
#include "iver/tpm.h"

#define TPM(rc) ((uint32_t) (TSS2_TPM_RC_LAYER | (rc)))
#define RESMGR_TPM(rc) ((uint32_t) (TSS2_RESMGR_TPM_RC_LAYER | (rc)))

START_TEST(test_transient) {
        static const uint32_t rcs[] = {
                TPM(TPM2_RC_RETRY), TPM(TPM2_RC_YIELDED), TPM(TPM2_RC_TESTING), TPM(TPM2_RC_CANCELED),
                TPM(TPM2_RC_NV_RATE), TPM(TPM2_RC_NV_UNAVAILABLE), TPM(TPM2_RC_PCR_CHANGED),
                RESMGR_TPM(TPM2_RC_RETRY), TSS2_TCTI_RC_TRY_AGAIN, TSS2_ESYS_RC_TRY_AGAIN, (TSS2_SYS_RC_LAYER | TSS2_BASE_RC_TRY_AGAIN),
        };
        for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++)
                ck_assert_msg(iver_tpm_rc_class(rcs[i]) == IVER_TPM_TRANSIENT, "0x%x", rcs[i]);
}
END_TEST

START_TEST(test_lost) {
        static const uint32_t rcs[] = {
                TSS2_TCTI_RC_IO_ERROR, TSS2_TCTI_RC_NO_CONNECTION, TSS2_TCTI_RC_GENERAL_FAILURE,
                TSS2_ESYS_RC_IO_ERROR, (TSS2_ESAPI_RC_LAYER | TSS2_BASE_RC_NO_CONNECTION), TSS2_ESYS_RC_MALFORMED_RESPONSE,
                TSS2_ESYS_RC_BAD_SEQUENCE, TSS2_ESYS_RC_BAD_TR, TSS2_SYS_RC_INSUFFICIENT_RESPONSE,
                TSS2_RESMGR_RC_LAYER | TSS2_BASE_RC_GENERAL_FAILURE,
                TPM(TPM2_RC_INITIALIZE), TPM(TPM2_RC_OBJECT_MEMORY), TPM(TPM2_RC_SESSION_MEMORY),
                TPM(TPM2_RC_CONTEXT_GAP), TPM(TPM2_RC_REFERENCE_H0), TPM(TPM2_RC_REFERENCE_S6),
                RESMGR_TPM(TPM2_RC_OBJECT_MEMORY), TPM(TPM2_RC_BAD_TAG),
        };
        for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++)
                ck_assert_msg(iver_tpm_rc_class(rcs[i]) == IVER_TPM_LOST, "0x%x", rcs[i]);
}
END_TEST

START_TEST(test_permanent) {
        static const uint32_t rcs[] = {
                /* format one: a handle, parameter or session of the command */
                TPM(TPM2_RC_VALUE | TPM2_RC_P | TPM2_RC_1), TPM(TPM2_RC_HASH | TPM2_RC_P | TPM2_RC_2),
                TPM(TPM2_RC_HANDLE | TPM2_RC_H | TPM2_RC_1), TPM(TPM2_RC_BAD_AUTH | TPM2_RC_S | TPM2_RC_1),
                TPM(TPM2_RC_AUTH_FAIL | TPM2_RC_S | TPM2_RC_1), TPM(TPM2_RC_HIERARCHY | TPM2_RC_P | TPM2_RC_1),
                RESMGR_TPM(TPM2_RC_VALUE | TPM2_RC_P | TPM2_RC_1),
                /* format zero: the TPM will not run this command */
                TPM(TPM2_RC_FAILURE), TPM(TPM2_RC_DISABLED), TPM(TPM2_RC_COMMAND_CODE), TPM(TPM2_RC_REBOOT),
                TPM(TPM2_RC_AUTH_MISSING),
                /* warnings that no wait cures: our locality is fixed */
                TPM(TPM2_RC_LOCALITY), TPM(TPM2_RC_LOCKOUT), TPM(TPM2_RC_NOT_USED),
                TSS2_MU_RC_INSUFFICIENT_BUFFER, TSS2_MU_RC_BAD_VALUE,
        };
        for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++)
                ck_assert_msg(iver_tpm_rc_class(rcs[i]) == IVER_TPM_PERMANENT, "0x%x", rcs[i]);
        /* the value swtpm answers an extend of PCR 17 at locality 0 with */
        ck_assert_int_eq(iver_tpm_rc_class(0x907), IVER_TPM_PERMANENT);
        /* PCR_Extend's PCR handle not a PCR: TPM_RC_VALUE on handle 1 */
        ck_assert_int_eq(iver_tpm_rc_class(0x184), IVER_TPM_PERMANENT);
}
END_TEST

START_TEST(test_success_and_errno) {
        ck_assert_int_eq(iver_tpm_rc_class(TSS2_RC_SUCCESS), _IVER_TPM_ERROR_CLASS_INVALID);
        ck_assert_int_eq(iver_tpm_errno_class(0), _IVER_TPM_ERROR_CLASS_INVALID);
        ck_assert_int_eq(iver_tpm_errno_class(-EAGAIN), IVER_TPM_TRANSIENT);
        ck_assert_int_eq(iver_tpm_errno_class(-ENXIO), IVER_TPM_LOST);
        ck_assert_int_eq(iver_tpm_errno_class(-EREMOTEIO), IVER_TPM_PERMANENT);
        ck_assert_int_eq(iver_tpm_errno_class(-EIO), IVER_TPM_LOST);
        ck_assert_str_eq(iver_tpm_error_class_to_string(IVER_TPM_PERMANENT), "permanent");
        ck_assert_ptr_null(iver_tpm_error_class_to_string(_IVER_TPM_ERROR_CLASS_INVALID));
}
END_TEST

START_TEST(test_none) {
        __attribute__((cleanup(iver_tpm_freep))) IverTpm *t = NULL;
        IverDigest d = { .algo = IVER_HASH_SHA256, .len = 32 };

        ck_assert_int_eq(iver_tpm_new("none", &t), 0);
        ck_assert(iver_tpm_is_none(t));
        ck_assert_int_eq(iver_tpm_connect(t), -ENOMEDIUM);
        ck_assert_int_eq(iver_tpm_extend(t, 23, &d, 1), -ENOMEDIUM);
        ck_assert(!iver_tpm_is_connected(t));
        ck_assert_uint_eq(iver_tpm_last_rc(t), 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("tpm");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_transient);
        tcase_add_test(tc, test_lost);
        tcase_add_test(tc, test_permanent);
        tcase_add_test(tc, test_success_and_errno);
        tcase_add_test(tc, test_none);
        suite_add_tcase(s, tc);
        return iver_run_suite(s);
}
