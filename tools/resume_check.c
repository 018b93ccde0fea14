/*
 * resume_check.c - see resume_check.h.
 */
#include <math.h>

#include "args.h"
#include "resume_check.h"

int tg_resume_check_counters(const char *cmd, const tg_checkpoint *ck, int64_t epochs,
                             int64_t max_step)
{
    const char *path = ck->path ? ck->path : "checkpoint";
    if (isnan(ck->best_val) || ck->best_val < 0) {
        const char *v = tg_checkpoint_meta(ck, "best_val");
        return tg_cli_fail(cmd, "--resume %s: checkpoint metadata 'best_val' is '%s', expected a "
                           "validation loss >= 0 (inf: none yet)", path, v ? v : "?");
    }
    if (ck->epoch > epochs)
        return tg_cli_fail(cmd, "--resume %s: checkpoint metadata 'epoch' is '%lld', beyond the "
                           "run's %lld epochs", path, (long long)ck->epoch, (long long)epochs);
    if (ck->step > max_step)
        return tg_cli_fail(cmd, "--resume %s: checkpoint metadata 'step' is '%lld', beyond the "
                           "%lld steps the run can have taken", path, (long long)ck->step,
                           (long long)max_step);
    const char *late = ck->best_epoch > ck->epoch ? "best_epoch"
                       : ck->bad_epochs > ck->epoch ? "bad_epochs" : NULL;
    if (late)
        return tg_cli_fail(cmd, "--resume %s: checkpoint metadata '%s' is '%lld', after the "
                           "run's epoch %lld", path, late,
                           (long long)(late[1] == 'e' ? ck->best_epoch : ck->bad_epochs),
                           (long long)ck->epoch);
    return 0;
}

int tg_resume_check_series(const char *cmd, const tg_checkpoint *ck, int64_t steps_per_epoch)
{
    int64_t epochs;
    if (tg_checkpoint_meta_int(ck, "epochs", 1, 100000, &epochs))
        return tg_cli_fail(cmd, "--resume %s", tg_last_error());
    /* an epoch's steps: this data's, or the longest the history records
     * (a run continued on other data with --allow-data-change) */
    double per = (double)steps_per_epoch, prev = 0;
    for (int64_t i = 0; i < ck->history_rows; i++) {
        double at = ck->history[i * TG_CKPT_HISTORY_COLS + 1];
        if (at - prev > per) per = at - prev;
        prev = at;
    }
    double max_step = ((double)epochs + 1) * per;   /* + 1: a mid-epoch checkpoint */
    return tg_resume_check_counters(cmd, ck, epochs,
                                    max_step < 9e18 ? (int64_t)max_step : INT64_MAX);
}
