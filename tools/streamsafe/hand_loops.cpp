#include "hand_loops.hpp"

namespace streamsafe::demo {

namespace {

/// Copies `batch` from the loader into a new buffer and preprocesses it, both on `stream`;
/// returns the pixels (allocated on `stream`, the caller frees them).
float* load_batch(loop_ops& ops, staging_ring& staging, training_model& model, StreamRef stream, std::size_t batch) {
  const std::uint8_t* pinned = staging.fill(batch);
  auto* images = static_cast<std::uint8_t*>(ops.allocate(model.image_bytes(), stream));
  ops.copy(stream, images, pinned, model.image_bytes());
  staging.copied(batch, stream);
  auto* pixels = static_cast<float*>(ops.allocate(model.pixel_bytes(), stream));
  model.preprocess(stream, images, pixels);
  ops.deallocate(images);  // used on `stream` only: its next user there is ordered after
  return pixels;
}

/// Forward, backward and the optimizer on `stream`, then the step's tensors and `pixels` freed.
void train_on(loop_ops& ops, training_model& model, StreamRef stream, float* pixels) {
  const training_model::step_tensors tensors = model.allocate_step(stream);
  model.forward_backward(stream, pixels, tensors);
  model.optimizer(stream);
  model.free_step(tensors);
  ops.deallocate(pixels);
}

}  // namespace

one_stream_loop::one_stream_loop(const Device& device, loop_ops& ops, const training_config& config,
                                 std::size_t staging_slots)
    : ops_(ops),
      stream_(device, {.name = "one_stream"}),
      staging_(device, ops, config.shape, staging_slots, true),
      model_(device, ops, config, stream_, stream_) {}

void one_stream_loop::step(std::size_t batch) {
  train_on(ops_, model_, stream_, load_batch(ops_, staging_, model_, stream_, batch));
}

four_stream_loop::four_stream_loop(const Device& device, loop_ops& ops, const training_config& config,
                                   four_stream_options options)
    : device_(device),
      ops_(ops),
      options_(options),
      data_(device, {.name = "data"}),
      preprocess_(device, {.name = "preprocess"}),
      compute_(device, {.name = "compute"}),
      sync_(options.allreduce ? std::optional<Stream>(std::in_place, device, stream_options{.name = "sync"}) : std::nullopt),
      e1_(device),
      e2_(device),
      e3_(device),
      reduced_(device),
      optimized_(device),
      staging_(device, ops, config.shape, options.staging_slots, options.fixed),
      model_(device, ops, config, device.default_stream(), compute_) {
  // The first compute reads the weights the model initialized on the default stream.
  if (options_.fixed) optimized_.record(device_.default_stream());
}

void four_stream_loop::step(std::size_t batch) {
  const std::uint8_t* pinned = staging_.fill(batch);
  auto* images = static_cast<std::uint8_t*>(ops_.allocate(model_.image_bytes(), data_));
  ops_.copy(data_, images, pinned, model_.image_bytes());
  ops_.record_stream(images, options_.fixed ? StreamRef(preprocess_) : StreamRef(data_));
  staging_.copied(batch, data_);
  e1_.record(data_);

  preprocess_.wait(e1_);
  auto* pixels = static_cast<float*>(ops_.allocate(model_.pixel_bytes(), preprocess_));
  model_.preprocess(preprocess_, images, pixels);
  ops_.record_stream(pixels, options_.fixed ? StreamRef(compute_) : StreamRef(preprocess_));
  e2_.record(preprocess_);

  compute_.wait(e2_);
  // The last step's optimizer (or the weights' initialization) wrote the weights, and read the
  // gradients this step rewrites.
  if (options_.fixed) compute_.wait(optimized_);
  const training_model::step_tensors tensors = model_.allocate_step(compute_);
  model_.forward_backward(compute_, pixels, tensors);
  ops_.record_stream(model_.grads(), compute_);
  e3_.record(compute_);
  optimize();

  // The step's tensors go out of scope, as in Python.
  model_.free_step(tensors);
  ops_.deallocate(pixels);
  ops_.deallocate(images);
}

void four_stream_loop::optimize() {
  StreamRef optimizer = device_.default_stream();
  if (sync_) {
    sync_->wait(e3_);
    model_.allreduce(*sync_);
    reduced_.record(*sync_);
  }
  // "Safe because the waits above order the gradients": they do not order the default stream.
  if (options_.fixed) optimizer.wait(sync_ ? reduced_ : e3_);
  model_.optimizer(optimizer);
  if (options_.fixed) optimized_.record(optimizer);
}

prefetcher_loop::prefetcher_loop(const Device& device, loop_ops& ops, const training_config& config,
                                 std::size_t staging_slots)
    : ops_(ops),
      side_(device, {.name = "prefetch"}),
      main_(device, {.name = "main"}),
      staging_(device, ops, config.shape, staging_slots, true),
      model_(device, ops, config, main_, main_) {}

prefetcher_loop::~prefetcher_loop() {
  // Stream-ordered: its last users are on the side stream it was allocated on.
  if (next_ != nullptr) ops_.deallocate(next_);
}

void prefetcher_loop::step(std::size_t batch) {
  if (next_ == nullptr) next_ = load_batch(ops_, staging_, model_, side_, batch);
  main_.wait(side_);
  float* pixels = next_;
  ops_.record_stream(pixels, main_);
  next_ = load_batch(ops_, staging_, model_, side_, batch + 1);
  train_on(ops_, model_, main_, pixels);
}

}  // namespace streamsafe::demo
