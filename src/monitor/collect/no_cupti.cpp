// Builds without the cuda backend have no CUPTI; a cuda device cannot exist there either, so
// this only keeps the link whole.
#include "monitor/collect/collection_source.hpp"

namespace streamsafe::monitor::detail {

opened_source open_cupti_source(const Device& device, std::weak_ptr<record_sink> /*sink*/,
                                const collector_options& /*options*/, const diagnostic_settings& /*settings*/) {
  return {nullptr, backoff_message(device.name(), "this build has no CUPTI (built without the cuda backend)")};
}

}  // namespace streamsafe::monitor::detail
