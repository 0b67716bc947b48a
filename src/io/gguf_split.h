/*
 * gguf_split.h — GGUF models split over several files by llama.cpp's
 * gguf-split, read as one gguf_file, and written (the inverse, for tests
 * and bench/gguf_split.c).
 *
 * The layout (llama.cpp's gguf-split --split and llama_model_loader):
 * PREFIX-00001-of-0000N.gguf .. PREFIX-0000N-of-0000N.gguf, each a valid
 * GGUF with its own tensor infos and data. The first holds the model's
 * metadata; every one holds split.no (u16, 0-based), split.count (u16) and
 * split.tensors.count (i32: the tensors of all shards together).
 */
#ifndef INF_GGUF_SPLIT_H
#define INF_GGUF_SPLIT_H

#include "io/gguf.h"

/*
 * Opens path as gguf_open_progress does, unless its name ends in
 * -KKKKK-of-NNNNN.gguf and the file has split.count (N = 1 too): then
 * every shard (path with KKKKK replaced by 00001 .. NNNNN; any one of them
 * may be given) is opened in mode and the result is one gguf_file with the
 * first shard's metadata (its split.* keys dropped, so that it reads as the
 * unsplit file) and path, and all shards' tensors in shard order, whose
 * data lies in each shard's mapping or buffer; gguf_close releases all. Checked first: every shard exists (before any is read); each has
 * split.count N and its own split.no; no tensor is in two shards; the
 * tensors add up to the first shard's split.tensors.count. A file that
 * says split.count > 1 under any other name is refused (its shards cannot
 * be found). Progress (GGUF_OPEN_READ) runs over all shards' bytes.
 * Errors are one line naming the shard and the key or tensor.
 */
inf_status gguf_open_split(const char *path, gguf_open_mode mode, void (*progress)(double fraction, void *user),
                           void *progress_user, gguf_file **out, inf_error *err);

/*
 * Whether [p, p + n) lies in f's mapped file data, or in the anonymous
 * copy f owns (GGUF_OPEN_READ), looking into every shard of a split set.
 * Storage that other readers built a gguf_file over is mapped where its
 * storage_source says so (a Hugging Face directory's mapped safetensors
 * files), and never owned.
 */
bool gguf_data_mapped(const gguf_file *f, const void *p, size_t n);
bool gguf_data_owned(const gguf_file *f, const void *p, size_t n);

/*
 * Where mapped data lies in its file: the descriptor of the file that
 * [p, p + n) was mapped from (open as long as f is) and the bytes' offset
 * in it, to read them with pread() instead of through the mapping. False
 * where gguf_data_mapped is.
 */
bool gguf_data_source(const gguf_file *f, const void *p, size_t n, int *fd, uint64_t *offset);

/*
 * Writes src (opened with data) as gguf-split --split does: shards of at
 * most max_tensors tensors each in src's tensor order, named
 * PREFIX-00001-of-0000N.gguf ..., the first with all of src's metadata
 * (split.* keys replaced), every one with split.no, split.count and
 * split.tensors.count. With no_tensors_first the first shard holds the
 * metadata alone (--no-tensor-first-split). *n_shards (may be NULL) gets N.
 */
inf_status gguf_split_write(const gguf_file *src, uint64_t max_tensors, bool no_tensors_first, const char *prefix,
                            int *n_shards, inf_error *err);

#endif /* INF_GGUF_SPLIT_H */
