/* ampsim — the library's public face. The CLI and the tests use the library
 * only through this header (which includes the module headers). */
#ifndef AMPSIM_H
#define AMPSIM_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_compare.h"
#include "amp_io.h"
#include "amp_tensorio.h"
#include "amp_analyze.h"
#include "amp_train.h"
#include "amp_layers_gpt.h"
#include "amp_scaler.h"
#include "amp_allreduce.h"
#include "amp_sweep.h"
#include "amp_checkpoint.h"
#include "amp_whatif.h"

const char *amp_version(void);

#endif
