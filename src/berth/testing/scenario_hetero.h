// Scenario commands for heterogeneous accelerators and normalized quota
// (hetero::QuotaLedger): see "Normalized quota" in tests/scenarios/README.md.
#pragma once

#include "berth/testing/scenario.h"

namespace berth::testing {

// Registers hetero-model, hetero-quota, hetero-charge, hetero-accrue and the
// expectations `charge` and `fair-share`.
void RegisterScenarioHetero(ScenarioRunner& runner);

}  // namespace berth::testing
