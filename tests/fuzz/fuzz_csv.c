/*
 * fuzz_csv.c - libFuzzer target for the CSV reader (engine/train/dataset.c,
 * tg_dataset_parse_csv): the whole input is the file, not NUL-terminated.
 * A parsed dataset is read end to end (every value must be finite, every
 * column named) and a scaler fitted on it (finite scales > 0).
 */
#include <math.h>

#include "fuzz.h"
#include "dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size heap copy, so a read past the end is caught. */
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    tg_dataset *d = NULL;
    if (tg_dataset_parse_csv(text, size, "fuzz.csv", &d) == TG_OK) {
        if (!d || d->rows < 1 || d->cols < 1) abort();
        for (int64_t i = 0; i < d->rows * d->cols; i++)
            if (!isfinite(d->data[i])) abort();
        for (int64_t j = 0; j < d->cols; j++)
            if (!d->names[j]) abort();
        /* the scaler over every row: a finite, positive scale per column
         * (or NULL with an error when the values overflow a double) */
        tg_scaler *sc = tg_scaler_fit(d, 0, d->rows);
        for (int64_t j = 0; sc && j < d->cols; j++)
            if (!isfinite(sc->mean[j]) || !(sc->std[j] > 0) || !isfinite(sc->std[j]) ||
                (sc->constant[j] && sc->std[j] != 1.0))
                abort();
        tg_scaler_free(sc);
        tg_dataset_free(d);
    } else if (d) {
        abort();   /* a failed parse must leave *out NULL */
    }
    free(text);
    return 0;
}
