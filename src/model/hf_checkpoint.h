/*
 * hf_checkpoint.h — a Hugging Face Qwen3 checkpoint directory, opened as
 * the GGUF that llama.cpp's converter would write for it, so the model
 * loader (model.c) binds and checks its weights as it does a file's.
 *
 * A directory holds config.json (hyperparameters), model.safetensors or
 * the shards named by model.safetensors.index.json (weights),
 * tokenizer.json and tokenizer_config.json (vocabulary, chat template),
 * and optionally generation_config.json (sampling defaults). Internal.
 */
#ifndef INF_HF_CHECKPOINT_H
#define INF_HF_CHECKPOINT_H

#include "inferno.h"
#include "io/gguf.h"

#include <stdbool.h>

/* True when path names a directory (a checkpoint or not). */
bool hf_checkpoint_is_dir(const char *path);

/*
 * Opens the checkpoint in dir as a gguf_file:
 *   - metadata: general.architecture "qwen3", general.name (the
 *     directory's name), the qwen3.* keys from config.json, and the
 *     general.sampling.* keys from generation_config.json (as llama.cpp's
 *     converter names them); no tokenizer.ggml.* keys (the tokenizer is
 *     read from tokenizer.json: hf_checkpoint_tokenizer);
 *   - tensors: the safetensors tensors under their GGUF names, dims
 *     reversed to GGUF order (fastest-varying first), data as stored (F32,
 *     F16, BF16) in the mapping or the anonymous copy (mode
 *     GGUF_OPEN_MMAP / GGUF_OPEN_READ; METADATA_ONLY leaves data NULL).
 *     A tensor whose data is not aligned to its element size is copied.
 * Before that every file is checked (safetensors.h), and config.json's
 * values, the index's consistency with the shards, each tensor's name,
 * dtype and shape against config.json, and that no tensor is missing or
 * unknown. Errors are one line naming the file and the key or tensor.
 * The returned file owns the shards; gguf_close releases everything. It
 * is read-only once open and may be read from any thread.
 */
inf_status hf_checkpoint_open(const char *dir, gguf_open_mode mode, void (*progress)(double fraction, void *user),
                              void *progress_user, gguf_file **out, inf_error *err);

/* The tokenizer of dir/tokenizer.json (with tokenizer_config.json beside
 * it); *out NULL, INF_OK when the directory has no tokenizer.json. */
inf_status hf_checkpoint_tokenizer(const char *dir, inf_tokenizer **out, inf_error *err);

#endif /* INF_HF_CHECKPOINT_H */
