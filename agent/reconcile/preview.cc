#include "agent/reconcile/preview.h"

namespace hawk::reconcile {

const char* PreviewBasisName(PreviewBasis basis) {
  switch (basis) {
    case PreviewBasis::kIncremental:
      return "INCREMENTAL";
    case PreviewBasis::kSeed:
      return "SEED";
    case PreviewBasis::kObserve:
      return "OBSERVE";
  }
  return "INCREMENTAL";
}

}  // namespace hawk::reconcile
