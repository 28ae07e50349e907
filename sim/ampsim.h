/* ampsim — the umbrella header for users of the library: every module's
 * header. Library files include only the module headers they use; a user who
 * needs only the rounding core includes amp_round.h. */
#ifndef AMPSIM_H
#define AMPSIM_H

/* sim/: the emulator */
#include "amp_base.h"
#include "amp_math.h"
#include "amp_io.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_tensorio.h"
#include "amp_scaler.h"
#include "amp_tensor.h"
#include "amp_policy.h"
#include "amp_gemm.h"
#include "amp_rnn.h"
#include "amp_layers.h"
#include "amp_nvfp4.h"
#include "amp_data.h"
#include "amp_model.h"
#include "amp_optim.h"
#include "amp_runlog.h"
#include "amp_checkpoint.h"
#include "amp_allreduce.h"
#include "amp_whatif.h"
#include "amp_train.h"
#include "amp_bench.h"
#include "amp_block.h"
#include "amp_castcheck.h"
/* analysis/ */
#include "amp_analyze.h"
#include "amp_csv.h"
#include "amp_compare.h"
#include "amp_sweep.h"
#include "amp_accum.h"
/* reports/ */
#include "amp_report.h"

#endif
