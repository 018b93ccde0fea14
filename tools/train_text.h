/*
 * train_text.h - `tgraph train --text FILE`: a character-level language
 * model (the gpt layer) trained on a text file with nanoGPT's protocol
 * (train_text.c). cmd_train.c hands the command line over when it holds
 * --text, or --resume of a checkpoint such a run wrote.
 */
#ifndef TG_TRAIN_TEXT_H
#define TG_TRAIN_TEXT_H

#include <stdbool.h>

/* Whether `tgraph train ARGS` is a text run: --text among the arguments,
 * or --resume FILE where FILE is a text run's checkpoint. */
bool tg_train_text_wanted(int argc, char **argv);
/* The whole command (argv[0] is "train"); the exit status. */
int tg_train_text_run(int argc, char **argv);

/* The checkpoint metadata key holding the vocabulary (tg_text_vocab_format):
 * its presence marks a text run's checkpoint. */
#define TG_TEXT_META_VOCAB "text.vocab"

#endif
