// Everything public, for convenience. Each header is one concept and can be included alone.
#pragma once

#include "streamsafe/config.hpp"
#include "streamsafe/current_stream.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/kernel.hpp"
#include "streamsafe/runtime_observer.hpp"
#include "streamsafe/stream.hpp"
