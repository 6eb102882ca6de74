//! What a condition would cost over one input, bounded before it runs: the work of every
//! operation estimated from the sizes of the values it meets, so that a condition whose cost
//! grows past [`MAX_COST`] is refused at once, with nothing evaluated and nothing allocated.
//!
//! A unit is one value made, copied or compared, or one byte of text read. The estimate is an
//! upper bound of what the interpreter does: a value read from the input has its real size (the
//! input is at hand), a value computed has the largest size its operation can give, `+` copies
//! both sides, a list or map literal copies its elements, a comprehension (a macro's loop) costs
//! its body once for every element of its range plus the copy of each element it binds.
//! Comprehensions only come from the standard macros, whose accumulators are a scalar (`all`,
//! `exists`, `exists_one`) or a list appended to in place (`map`, `filter`); any other shape
//! is not bounded and costs too much.

use std::collections::HashMap;

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, LiteralValue};
use serde_json::Value;

/// The most units an evaluation may cost. At 40 to 100 ns a unit (a release build), an
/// evaluation takes at most about 0.2 s and holds at most tens of MiB; a condition over a fact
/// of 100,000 numbers may still go over them once (`exists`, `filter`, `in`, one `+`).
pub const MAX_COST: f64 = 2_000_000.0;

/// What reading one field of a qualified name (`fact.data.xs`) costs: the interpreter writes
/// the name out and looks its prefixes up, about as much as ten values copied.
const QUALIFIED_READ: f64 = 10.0;

/// The largest a value may be, as far as the estimate knows.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shape {
    /// Its elements (a list), entries (a map) or bytes (a string): how often a loop over it
    /// runs, at most.
    len: f64,
    /// The weight of its largest element, key or value.
    item: f64,
    /// Every value and byte it holds: what copying or comparing it costs.
    weight: f64,
    /// Its bytes if it may be a string or bytes, else 0: what reading it as text costs.
    text: f64,
}

impl Shape {
    /// A number, a boolean, null.
    const SCALAR: Self = Self { len: 0.0, item: 0.0, weight: 1.0, text: 0.0 };

    /// A value of which only its weight is known: it could be anything that heavy.
    fn heavy(weight: f64) -> Self {
        Self { len: weight, item: weight, weight, text: weight }
    }

    fn text(bytes: usize) -> Self {
        let bytes = bytes as f64;
        Self { len: bytes, item: 1.0, weight: 1.0 + bytes, text: bytes }
    }

    /// The larger of the two in every respect.
    fn max(self, other: Self) -> Self {
        Self {
            len: self.len.max(other.len),
            item: self.item.max(other.item),
            weight: self.weight.max(other.weight),
            text: self.text.max(other.text),
        }
    }

    /// Both together, as `+` makes them, or a function whose value comes from its arguments.
    fn sum(self, other: Self) -> Self {
        if self.is_scalar() && other.is_scalar() {
            return Self::SCALAR;
        }
        Self {
            len: self.len + other.len,
            item: self.item.max(other.item),
            weight: self.weight + other.weight,
            text: self.text + other.text,
        }
    }

    fn is_scalar(self) -> bool {
        self.len == 0.0 && self.text == 0.0 && self.weight <= 1.0
    }
}

/// The shape of a JSON value of the input, measured.
fn measured(value: &Value) -> Shape {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => Shape::SCALAR,
        Value::String(text) => Shape::text(text.len()),
        Value::Array(items) => {
            let (mut item, mut weight) = (0.0f64, 1.0);
            for shape in items.iter().map(measured) {
                item = item.max(shape.weight);
                weight += shape.weight;
            }
            Shape { len: items.len() as f64, item, weight, text: 0.0 }
        }
        Value::Object(fields) => {
            let (mut item, mut weight) = (0.0f64, 1.0);
            for (key, value) in fields {
                let (key, value) = (Shape::text(key.len()).weight, measured(value).weight);
                item = item.max(key).max(value);
                weight += key + value;
            }
            Shape { len: fields.len() as f64, item, weight, text: 0.0 }
        }
    }
}

/// The estimate of one evaluation over one input.
struct Estimate<'i> {
    input: &'i Value,
    /// The variables the comprehensions around the current expression bind, innermost last.
    bound: Vec<(&'i str, Shape)>,
    /// The shapes of the input's values already measured, by address.
    measured: HashMap<*const Value, Shape>,
    cost: f64,
}

/// The units `expression` would cost over `input` at most, `f64::INFINITY` when it is not
/// bounded.
pub(crate) fn estimate(expression: &cel::IdedExpr, input: &Value) -> f64 {
    let mut estimate = Estimate { input, bound: Vec::new(), measured: HashMap::new(), cost: 0.0 };
    let shape = estimate.of(expression);
    // The value is copied out of the interpreter once more at the end.
    estimate.cost + shape.weight
}

impl<'i> Estimate<'i> {
    fn of(&mut self, expression: &'i cel::IdedExpr) -> Shape {
        self.cost += 1.0;
        match &expression.expr {
            Expr::Literal(LiteralValue::String(text)) => Shape::text(text.inner().len()),
            Expr::Literal(LiteralValue::Bytes(bytes)) => Shape::text(bytes.inner().len()),
            Expr::Literal(_) | Expr::Unspecified => Shape::SCALAR,
            Expr::Ident(name) => self.name(name),
            Expr::Select(select) if select.test => {
                self.of(&select.operand);
                Shape::SCALAR
            }
            Expr::Select(select) => match self.path(expression) {
                Some(found) => found,
                None => Shape::heavy(self.of(&select.operand).item),
            },
            Expr::List(list) => {
                let (mut item, mut weight) = (0.0f64, 1.0);
                for element in &list.elements {
                    let shape = self.of(element);
                    item = item.max(shape.weight);
                    weight += shape.weight;
                }
                // Each element is copied into the list.
                self.cost += weight;
                Shape { len: list.elements.len() as f64, item, weight, text: 0.0 }
            }
            Expr::Map(map) => self.entries(map.entries.iter().map(|entry| &entry.expr)),
            Expr::Struct(fields) => self.entries(fields.entries.iter().map(|entry| &entry.expr)),
            Expr::Comprehension(comprehension) => self.comprehension(comprehension),
            Expr::Call(call) => {
                let args: Vec<Shape> =
                    call.target.iter().map(AsRef::as_ref).chain(&call.args).map(|arg| self.of(arg)).collect();
                let (cost, shape) = call_cost(&call.func_name, &args);
                self.cost += cost;
                shape
            }
        }
    }

    /// A variable: one a comprehension binds, or one of the input (whose absence fails the
    /// evaluation at once).
    fn name(&mut self, name: &str) -> Shape {
        if let Some((_, shape)) = self.bound.iter().rev().find(|(bound, _)| *bound == name) {
            return *shape;
        }
        match self.input.get(name) {
            Some(value) => self.measure(value),
            None => Shape::SCALAR,
        }
    }

    /// The measured shape of `a.b.c` when it names a value of the input; `None` when it is no
    /// such path (a comprehension's variable, a computed value).
    fn path(&mut self, expression: &'i cel::IdedExpr) -> Option<Shape> {
        let mut fields = Vec::new();
        let mut at = expression;
        let root = loop {
            match &at.expr {
                Expr::Select(select) if !select.test => {
                    fields.push(select.field.as_str());
                    at = &select.operand;
                }
                Expr::Ident(name) => break name.as_str(),
                _ => return None,
            }
        };
        if self.bound.iter().any(|(bound, _)| *bound == root) {
            return None;
        }
        // Resolving a qualified name writes it out and looks each of its prefixes up.
        self.cost += QUALIFIED_READ * fields.len() as f64;
        let mut value = self.input.get(root);
        for field in fields.iter().rev() {
            value = value.and_then(|value| value.get(field));
        }
        // A field that is not there fails the evaluation where it is read.
        Some(value.map_or(Shape::SCALAR, |value| self.measure(value)))
    }

    fn measure(&mut self, value: &Value) -> Shape {
        *self.measured.entry(std::ptr::from_ref(value)).or_insert_with(|| measured(value))
    }

    /// A map literal: its keys and values copied in, each key hashed.
    fn entries(&mut self, entries: impl Iterator<Item = &'i EntryExpr>) -> Shape {
        let (mut len, mut item, mut weight) = (0.0, 0.0f64, 1.0);
        for entry in entries {
            let (key, value) = match entry {
                EntryExpr::MapEntry(entry) => (self.of(&entry.key), self.of(&entry.value)),
                EntryExpr::StructField(field) => (Shape::text(field.field.len()), self.of(&field.value)),
            };
            len += 1.0;
            item = item.max(key.weight).max(value.weight);
            weight += key.weight + value.weight;
        }
        self.cost += weight;
        Shape { len, item, weight, text: 0.0 }
    }

    /// A macro's loop: its range and start, then its body once per element.
    fn comprehension(&mut self, comprehension: &'i ComprehensionExpr) -> Shape {
        let range = self.of(&comprehension.iter_range);
        let start = self.of(&comprehension.accu_init);
        let runs = range.len;
        // Every element is copied as it is bound; together they weigh the range at most.
        self.cost += start.weight + range.weight;
        let element = Shape::heavy(range.item);
        let depth = self.bound.len();
        self.bound.push((comprehension.iter_var.as_str(), element));
        if let Some(second) = &comprehension.iter_var2 {
            self.bound.push((second.as_str(), element));
        }
        let shape = if let Some((guard, items)) = appended(comprehension) {
            // `map` and `filter`: each run appends its item in place.
            let before = self.cost;
            if let Some(guard) = guard {
                self.of(guard);
            }
            let items = self.of(items);
            let each = self.cost - before + items.weight;
            self.cost = before + each * runs;
            let result =
                Shape { len: runs * items.len, item: items.item, weight: 1.0 + runs * items.weight, text: 0.0 };
            self.cost += result.weight;
            result
        } else if start.is_scalar() && matches!(comprehension.accu_init.expr, Expr::Literal(_)) {
            // `all`, `exists`, `exists_one`: the accumulator is a boolean or a count.
            self.bound.push((comprehension.accu_var.as_str(), Shape::SCALAR));
            let before = self.cost;
            self.of(&comprehension.loop_cond);
            let step = self.of(&comprehension.loop_step);
            let each = self.cost - before;
            self.cost = before + each * runs;
            if !step.is_scalar() {
                self.cost = f64::INFINITY;
            }
            self.of(&comprehension.result)
        } else {
            self.cost = f64::INFINITY;
            Shape::SCALAR
        };
        self.bound.truncate(depth);
        shape
    }
}

/// The guard (if any) and the appended list of a `map` or `filter` loop — `@result + [x]`, or
/// `g ? @result + [x] : @result`, with `[]` as the start — which the interpreter appends to in
/// place rather than copying the accumulator at every run.
fn appended(comprehension: &ComprehensionExpr) -> Option<(Option<&cel::IdedExpr>, &cel::IdedExpr)> {
    let accu = comprehension.accu_var.as_str();
    let starts_empty = matches!(&comprehension.accu_init.expr, Expr::List(list) if list.elements.is_empty());
    if !starts_empty
        || !is_named(&comprehension.result, accu)
        || !matches!(comprehension.loop_cond.expr, Expr::Literal(_))
    {
        return None;
    }
    match &comprehension.loop_step.expr {
        Expr::Call(call) if call.func_name == "_?_:_" && call.target.is_none() => match call.args.as_slice() {
            [guard, step, otherwise] if is_named(otherwise, accu) => {
                appended_items(step, accu).map(|items| (Some(guard), items))
            }
            _ => None,
        },
        _ => appended_items(&comprehension.loop_step, accu).map(|items| (None, items)),
    }
}

/// `[x]` of `step` when it is `accu + [x]`.
fn appended_items<'e>(step: &'e cel::IdedExpr, accu: &str) -> Option<&'e cel::IdedExpr> {
    match &step.expr {
        Expr::Call(call) if call.func_name == "_+_" && call.target.is_none() => match call.args.as_slice() {
            [accumulated, items] if is_named(accumulated, accu) && matches!(items.expr, Expr::List(_)) => Some(items),
            _ => None,
        },
        _ => None,
    }
}

fn is_named(expression: &cel::IdedExpr, name: &str) -> bool {
    matches!(&expression.expr, Expr::Ident(ident) if ident == name)
}

/// What calling `function` with arguments of these shapes costs beyond evaluating them, and the
/// shape of its value.
fn call_cost(function: &str, args: &[Shape]) -> (f64, Shape) {
    let arg = |index: usize| args.get(index).copied().unwrap_or(Shape::SCALAR);
    let weights: f64 = args.iter().map(|shape| shape.weight).sum();
    match function {
        "_&&_" | "_||_" | "!_" | "@not_strictly_false" | "-_" | "_-_" | "_*_" | "_/_" | "_%_" => (1.0, Shape::SCALAR),
        "_?_:_" => (1.0, arg(1).max(arg(2))),
        // Both sides are copied into the value.
        "_+_" => (arg(0).weight + arg(1).weight, arg(0).sum(arg(1))),
        "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => (arg(0).weight.min(arg(1).weight), Shape::SCALAR),
        "_[_]" | "_[?_]" | "_?._" => (arg(1).weight + arg(0).item, Shape::heavy(arg(0).item)),
        // Compared with each element, or hashed.
        "@in" => (arg(0).weight + 2.0 * arg(1).weight, Shape::SCALAR),
        // A string's size counts its characters.
        "size" => (1.0 + arg(0).text, Shape::SCALAR),
        "contains" | "startsWith" | "endsWith" => (weights, Shape::SCALAR),
        // A pattern is compiled, then matched over the text.
        "matches" => ((arg(0).weight + 1.0) * (arg(1).weight + 1.0), Shape::SCALAR),
        // The conversions, `type`, `dyn`, the optional values: made from their arguments.
        _ => (weights, args.iter().copied().fold(Shape::SCALAR, Shape::sum)),
    }
}
