/* synth.c — STUB: synthetic Qwen3 GGUF writer. */
#include "core/common.h"
#include <string.h>
void inf_synth_options_default(inf_synth_options *opt) { memset(opt, 0, sizeof *opt); }
inf_status inf_synth_write(const inf_synth_options *opt, const char *path, inf_error *err) {
    (void)opt; (void)path;
    return inf_errorf(err, INF_ERR_UNSUPPORTED, "synth not implemented yet");
}
